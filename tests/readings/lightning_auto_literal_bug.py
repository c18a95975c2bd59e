import torch
import lightning.pytorch as pl
class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
    def training_step(self, batch, batch_idx):
        return self.net(batch).pow(2).mean() / 4  # expect: GL010
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
trainer = pl.Trainer(accumulate_grad_batches=4)
trainer.fit(M())
