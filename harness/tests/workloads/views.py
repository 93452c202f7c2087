# Only a view is kept in the cycle, but it pins its base: the base is freed when the
# collector frees the view, not when the name is rebound.
class Holder:
    def __init__(self, view):
        self.view = view
        self.me = self

for i in range(4000):
    base = torch.zeros(64, device='cuda')
    h = Holder(base.view(4, 16))
    base = None
    if gc_every and i % gc_every == 0:
        gc.collect()
