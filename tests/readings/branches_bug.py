import torch
import sys
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
rank = int(sys.argv[1]) if len(sys.argv) > 1 else 0
flags = [len(sys.argv) > k for k in range(20)]
N = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean()
    if flags[0]:
        print("log 0", loss.item())
    if rank == 0 and i % 2 == 0:
        torch.save(model.state_dict(), "ckpt0.pt")
    if flags[1]:
        print("log 1", loss.item())
    if rank == 0 and i % 3 == 0:
        torch.save(model.state_dict(), "ckpt1.pt")
    if flags[2]:
        print("log 2", loss.item())
    if rank == 0 and i % 4 == 0:
        torch.save(model.state_dict(), "ckpt2.pt")
    if flags[3]:
        print("log 3", loss.item())
    if rank == 0 and i % 5 == 0:
        torch.save(model.state_dict(), "ckpt3.pt")
    if flags[4]:
        print("log 4", loss.item())
    if rank == 0 and i % 6 == 0:
        torch.save(model.state_dict(), "ckpt4.pt")
    if flags[5]:
        print("log 5", loss.item())
    if rank == 0 and i % 7 == 0:
        torch.save(model.state_dict(), "ckpt5.pt")
    if flags[6]:
        print("log 6", loss.item())
    if rank == 0 and i % 8 == 0:
        torch.save(model.state_dict(), "ckpt6.pt")
    if flags[7]:
        print("log 7", loss.item())
    if rank == 0 and i % 9 == 0:
        torch.save(model.state_dict(), "ckpt7.pt")
    if flags[8]:
        print("log 8", loss.item())
    if rank == 0 and i % 10 == 0:
        torch.save(model.state_dict(), "ckpt8.pt")
    if flags[9]:
        print("log 9", loss.item())
    if rank == 0 and i % 11 == 0:
        torch.save(model.state_dict(), "ckpt9.pt")
    loss.backward()  # expect: GL003
    if (i + 1) % N == 0:
        opt.step()
        opt.zero_grad()
