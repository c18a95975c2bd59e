import torch
from mmengine.optim import OptimWrapper
model = torch.nn.Linear(4, 1)
optim_wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=4)
for x in torch.randn(8, 2, 4):
    with optim_wrapper.optim_context(model):
        loss = model(x).pow(2).mean() / 4
    optim_wrapper.update_params(loss)  # expect: GL010
