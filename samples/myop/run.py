"""samples/myop/run.py: call one's own torch operator (myop.scaled_add).

Build it first ('make myop' in tdebug's tree, or setup.py beside this
file), then:
    tdebug tour extension
    tdebug run -b scaled_add -- /usr/bin/python3 samples/myop/run.py
"""
import torch

import myop

a = torch.arange(6.0).reshape(2, 3)
b = torch.ones(2, 3)
c = myop.scaled_add(a, b, 2.0)
print(c)
parts = myop.halves(c)
print(len(parts), myop.join(parts).shape)
