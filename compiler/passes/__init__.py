"""Passes over the IR: structure checks (NAD2xx), shape inference (NAD3xx), verification."""
from . import shapes, structure  # noqa: F401 - importing declares the diagnostic codes
from .contract import ANY, SQUARE, Domain, fixed, parse_domain
from .shapes import Limits, ShapeResult, contract, evaluate_shape, infer_shapes
from .verify import STEM_STRIDES, BlockReport, verify_block, verify_program, verify_stem

__all__ = ["ANY", "SQUARE", "BlockReport", "Domain", "Limits", "ShapeResult", "contract", "evaluate_shape", "fixed",
           "infer_shapes", "parse_domain", "STEM_STRIDES", "verify_block", "verify_program", "verify_stem"]
