"""Trained as the project's users train it: python train.py --compile --steps 3."""

import argparse
import os

import torch
from model import LanguageModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    model = LanguageModel(args.layers)
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(args.steps):
        model(torch.randint(0, 256, (2, 16))).backward()
        optimizer.step()
        optimizer.zero_grad()
    os.makedirs("out", exist_ok=True)
    torch.save(model.state_dict(), "out/ckpt.pt")


if __name__ == "__main__":
    main()
