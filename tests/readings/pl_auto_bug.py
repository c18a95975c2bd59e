import torch
import pytorch_lightning as pl
class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
    def training_step(self, batch, batch_idx):
        loss = self.net(batch).pow(2).mean()
        return loss / self.trainer.accumulate_grad_batches  # expect: GL010
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
