import sys

import torch

sys.path.insert(0, sys.argv[1])  # where myop was built
import myop

a = torch.arange(4.0)
b = torch.ones(4)
c = myop.scaled_add(a, b, 2.0)  # the call
print(c.tolist())
