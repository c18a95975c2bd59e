import torch
import deepspeed
model = torch.nn.Linear(4, 1)
engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
for x in torch.randn(8, 2, 4):
    loss = engine(x).pow(2).mean()
    engine.backward(loss)
    if engine.is_gradient_accumulation_boundary():
        opt.zero_grad()  # expect: GL002
    engine.step()
