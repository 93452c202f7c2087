class Node:
    def __init__(self, t):
        self.tensor = t
        self.link = None

    def touch(self):
        return self.tensor

for i in range(3000):
    a = Node(torch.zeros(16, device='cuda'))
    b = Node(torch.zeros(16, device='cuda'))
    a.link, b.link = b, a
    handlers = []
    for k in range(60):
        handlers.append(a.touch)
    handlers = None
    if gc_every and i % gc_every == 0:
        gc.collect()
