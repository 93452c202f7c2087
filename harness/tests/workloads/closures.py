# A callback that refers to itself through its closure cell (function -> closure tuple ->
# cell -> function), capturing a tensor and a lambda over it: the shape of a hook that
# re-registers itself.
def make_callback(t):
    scale = lambda x: x.view(-1)

    def callback():
        return callback, scale(t)

    return callback

for i in range(4000):
    cb = make_callback(torch.zeros(16, device='cuda'))
    cb()
    if gc_every and i % gc_every == 0:
        gc.collect()
