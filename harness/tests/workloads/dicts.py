# A state dict that holds itself through a nested dict, with tensors as values: the shape of
# an optimizer state or a cache that keeps a back-reference to its owner.
for i in range(4000):
    state = {'weight': torch.zeros(16, device='cuda'), 'step': i}
    state['meta'] = {'owner': state, 'name': 'layer'}
    if gc_every and i % gc_every == 0:
        gc.collect()
