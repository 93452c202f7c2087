# An object that stores the exception it caught: exception -> traceback -> frame -> self ->
# exception. The tensor it holds lives until the collector frees the cycle.
class Stage:
    def __init__(self, t):
        self.tensor = t
        self.error = None

    def check(self):
        raise ValueError('bad input', 16)

    def step(self):
        try:
            self.check()
        except ValueError as e:
            self.error = e

for i in range(3000):
    Stage(torch.zeros(16, device='cuda')).step()
    if gc_every and i % gc_every == 0:
        gc.collect()
