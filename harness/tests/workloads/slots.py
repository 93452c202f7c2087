# Instances with __slots__ (no instance dict) in a two-object cycle, each holding a tensor.
class Pair:
    __slots__ = ('tensor', 'other')

    def __init__(self, t):
        self.tensor = t
        self.other = None

for i in range(5000):
    a = Pair(torch.zeros(16, device='cuda'))
    b = Pair(torch.zeros(16, device='cuda'))
    a.other, b.other = b, a
    if gc_every and i % gc_every == 0:
        gc.collect()
