"""The compiler: architectures of blocks on a skeleton, width fitting, networks, mutations, backends.

The names below load their module on first use (as `nader.dsl`'s do), so importing one
submodule does not import torch or ONNX. docs/api.md lists them. (`fit` and `mutate` are
submodules' names, so their functions are imported from `nader.compiler.fit` and `nader.compiler.mutate`.)
"""
from nader import lazy_exports

_EXPORTS = {
    "Architecture": "architecture", "BuildError": "errors", "SKELETONS": "skeletons",
    "check_architecture": "reply_checks", "load_architecture": "architecture", "skeleton_info": "skeletons",
    "Budget": "fit", "FitError": "fit", "FitResult": "fit", "preset_budget": "fit",
    "analyze": "network", "build_network": "network",
    "code_table": "codes",
    "CannotApply": "mutate", "Mutation": "mutate", "MutationError": "mutate", "apply_mutation": "mutate",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
