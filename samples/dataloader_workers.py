"""A torch DataLoader with worker processes, busy for a while.

DataLoader(num_workers=4) forks four worker processes that load items in
parallel; here each item takes a while (the dataset sleeps, as a slow disk
or decoder would), so the workers stay alive for about --seconds (default
30) and then the program ends by itself.  It prints its own pid and each
worker's.

While it runs, from another terminal (P=/usr/bin/python3):

    tdebug stacks --children PID        the stacks of the main process and
                                        of every worker
    ps --ppid PID                       the workers

Options: --seconds S (how long the workers stay busy), --workers N.
"""
import argparse
import os
import time
import warnings

import torch
from torch.utils.data import DataLoader, Dataset

ITEMS_PER_WORKER = 8


class SlowDataset(Dataset):
    def __init__(self, length, delay):
        self.length = length
        self.delay = delay

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        time.sleep(self.delay)  # the workers spend their time here
        return torch.full((4,), float(index))


def announce_worker(worker_id):
    print(f"worker {worker_id}: pid {os.getpid()}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="A DataLoader whose workers stay busy for a while.")
    parser.add_argument("--seconds", type=float, default=30.0, help="about how long the workers stay busy")
    parser.add_argument("--workers", type=int, default=4, help="number of worker processes")
    args = parser.parse_args()

    pid = os.getpid()
    # Each worker loads ITEMS_PER_WORKER items, one at a time.
    dataset = SlowDataset(args.workers * ITEMS_PER_WORKER, args.seconds / ITEMS_PER_WORKER)
    print(f"dataloader_workers.py: pid {pid}, {args.workers} workers busy for about {args.seconds:g}s; "
          f"try 'tdebug stacks --children {pid}'", flush=True)
    # Four workers on a small machine is the point here, not a mistake.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    # timeout: a worker that stops answering ends the program with an
    # error instead of a hang.
    loader = DataLoader(dataset, batch_size=1, num_workers=args.workers,
                        worker_init_fn=announce_worker, timeout=max(60.0, 4 * args.seconds))
    total = sum(float(batch.sum()) for batch in loader)
    print(f"done: {len(dataset)} items, sum {total:g}")


if __name__ == "__main__":
    main()
