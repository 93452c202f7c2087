class AwaitableTensor:
    def __init__(self, size):
        self._tensor_size = size
        self._tensor = None

    def wait(self):
        self._tensor = torch.zeros(self._tensor_size, device='cuda')
        return self._tensor

class AwaitableTensorWithViewCallBack:
    def __init__(self, tensor_awaitable, view_dim):
        self._tensor_awaitable = tensor_awaitable
        self._view_dim = view_dim
        self._callback = lambda ret: ret.view(-1, self._view_dim)

    def wait(self):
        return self._callback(self._tensor_awaitable.wait())

for i in range(5000):
    a_tensor = AwaitableTensor(16)
    AwaitableTensorWithViewCallBack(a_tensor, 4).wait()
    if gc_every and i % gc_every == 0:
        gc.collect()
