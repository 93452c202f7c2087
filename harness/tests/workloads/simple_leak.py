class Node:
    def __init__(self, t):
        self.tensor = t
        self.link = None

for i in range(5000):
    A = torch.zeros(16, device='cuda')
    B = torch.zeros(16, device='cuda')
    a, b = Node(A), Node(B)
    a.link, b.link = b, a
    if gc_every and i % gc_every == 0:
        gc.collect()
