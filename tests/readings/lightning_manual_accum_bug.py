import torch
import lightning.pytorch as pl
class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = torch.nn.Linear(4, 1)
    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.net(batch).pow(2).mean()
        self.manual_backward(loss)  # expect: GL003
        if batch_idx % 4 == 0:  # expect: GL004
            opt.step()
            opt.zero_grad()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
