import lightning.pytorch as pl
import torch


class Gan(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net_g = torch.nn.Linear(4, 4)
        self.net_d = torch.nn.Linear(4, 1)
        self.optim_g = torch.optim.AdamW(self.net_g.parameters())
        self.optim_d = torch.optim.AdamW(self.net_d.parameters())
        self.scheduler_g = torch.optim.lr_scheduler.ExponentialLR(self.optim_g, gamma=0.99)
        self.scheduler_d = torch.optim.lr_scheduler.ExponentialLR(self.optim_d, gamma=0.99)

    def configure_optimizers(self):
        # two lists: the optimizers, then their schedulers
        return [self.optim_g, self.optim_d], [self.scheduler_g, self.scheduler_d]

    def training_step(self, batch, batch_idx):
        optim_g, optim_d = self.optimizers()
        self.toggle_optimizer(optim_g)  # the discriminator's parameters are frozen meanwhile
        y_hat = self.net_g(batch)
        self.manual_backward(-self.net_d(y_hat).mean())
        optim_g.step()
        optim_g.zero_grad()
        self.untoggle_optimizer(optim_g)
        loss_d = self.net_d(y_hat.detach()).mean() - self.net_d(batch).mean()
        self.manual_backward(loss_d)
        optim_d.step()
        optim_d.zero_grad()
