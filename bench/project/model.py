"""The benchmark's project: a small GPT-2 from transformers, wrapped with a debugging print."""

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel


class LanguageModel(nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        config = GPT2Config(n_layer=layers, n_embd=64, n_head=4, n_positions=64, vocab_size=256)
        self.gpt = GPT2LMHeadModel(config)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        loss = self.gpt(input_ids=ids, labels=ids).loss
        print("loss", loss)
        return loss
