#!/usr/bin/env python3
"""Train a small torchvision CNN on a bfeed stream, in bf16 autocast on the
CPU, checkpointing the model, the optimizer and the stream's position
together; kill it at any point and run it again: it resumes exactly (the
batches after the checkpoint are the ones it would have seen).

    build/bin/bfeed make-demo /tmp/demo
    build/bin/bfeedd --listen unix:/tmp/bfeed.sock --dataset demo=/tmp/demo/train &
    PYTHONPATH=build/python python3 client/python/examples/train_torch.py \\
        --connect unix:/tmp/bfeed.sock --dataset demo --ckpt /tmp/ckpt.pt --kill-after 25
    PYTHONPATH=build/python python3 client/python/examples/train_torch.py \\
        --connect unix:/tmp/bfeed.sock --dataset demo --ckpt /tmp/ckpt.pt

--kill-after N sends the process SIGKILL after N steps, as a crash would.
"""
import argparse
import os
import signal
import time

import torch
import torch.nn.functional as F
import torchvision

import bfeed.torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--ckpt-every", type=int, default=10, help="steps between checkpoints")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    ap.add_argument("--kill-after", type=int, default=0, help="SIGKILL this process after N steps (a crash)")
    a = ap.parse_args()

    torch.manual_seed(0)
    data = bfeed.torch.Dataset(a.connect, a.dataset, batch=a.batch, size=a.size, seed=1)
    # Workers take the rank's batches in turn: the same batches as none, and
    # loader.state_dict() follows what this loop received.
    loader = bfeed.torch.DataLoader(data, num_workers=a.workers)
    model = torchvision.models.resnet18(num_classes=data.num_classes)  # asked of the daemon
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    if os.path.exists(a.ckpt):
        ck = torch.load(a.ckpt)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        loader.load_state_dict(ck["data"])
        step = ck["step"]
        print("resumed from %s: step %d, epoch %d, batch %d" % (a.ckpt, step, data.epoch, data.batch), flush=True)

    def save():
        tmp = a.ckpt + ".tmp"
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "data": loader.state_dict(),
                    "step": step}, tmp)
        os.replace(tmp, a.ckpt)  # a kill never leaves half a checkpoint

    run_steps = 0
    t0 = time.monotonic()
    for epoch in range(data.epoch, a.epochs):
        data.set_epoch(epoch)
        correct = seen = 0
        for b in loader:
            x, y = b["image"], b["label"]  # torch.bfloat16 [B,3,S,S], torch.int64 [B]
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
                loss = F.cross_entropy(out.float(), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            run_steps += 1
            correct += (out.argmax(1) == y).sum().item()
            seen += len(y)
            st = loader.state_dict()
            print("step %3d  epoch %d batch %2d  first sample %4d  loss %.4f" % (
                step, epoch, bfeed.torch.position(b).batch, b["index"][0].item(), loss.item()), flush=True)
            if step % a.ckpt_every == 0:
                save()
                print("checkpoint at step %d: data %s" % (step, st), flush=True)
            if a.kill_after and run_steps == a.kill_after:
                print("killing myself (SIGKILL) after %d steps" % run_steps, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        print("epoch %d: train accuracy %.3f, %.1f s" % (epoch, correct / max(seen, 1), time.monotonic() - t0),
              flush=True)
    save()
    print("done: %d steps" % step)


if __name__ == "__main__":
    main()
