# Not valid Python: the `else:` below sits at a column no block has (CPython: IndentationError).
# graphmend must report a syntax error and leave the file alone (found by CI's fuzz run).
"""Comments inside a rewritten `if` stay, on lines of their own inside the call, and the
statement keeps its line count, so code below it keeps its line numbers."""
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, hidden, mask):
        if not torch.all(mask == 1):
            # zero out padded positions
            hidden =* mask
        if hidden.sum() > 0:  # trailing comment on the test
            hidden = hidden - 1
     
   else:
            hidden = hidden + 1  # and one on a branch
        return hidden
