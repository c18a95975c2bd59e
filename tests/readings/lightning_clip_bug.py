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
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0)
        opt.step()  # expect: GL001
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
