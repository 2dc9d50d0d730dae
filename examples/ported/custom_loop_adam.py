"""(c) A custom training loop with Adam: fit a cubic's coefficients with variables, a loss function and
optimizer.minimize. The ndflow port of custom_loop_adam.js, line for line."""

import ndflow as nf

# the curve to find: y = -0.8 x^3 - 0.2 x^2 + 0.9 x + 0.5
xs = nf.linspace(-1, 1, 100)
ys = nf.tidy(lambda: xs.pow(3).mul(-0.8).add(xs.square().mul(-0.2)).add(xs.mul(0.9)).add(0.5))

a = nf.variable(nf.scalar(0.1))
b = nf.variable(nf.scalar(0.1))
c = nf.variable(nf.scalar(0.1))
d = nf.variable(nf.scalar(0.1))


def predict(x):
    return nf.tidy(lambda: a.mul(x.pow(3)).add(b.mul(x.square())).add(c.mul(x)).add(d))


def loss(predictions, labels):
    return predictions.sub(labels).square().mean()


optimizer = nf.train.adam(0.05)
before = nf.memory().num_tensors
for i in range(600):
    cost = optimizer.minimize(lambda: loss(predict(xs), ys), True)
    if i % 200 == 0:
        print(f"step {i}: loss {cost.data_sync()[0]}")
    cost.dispose()
# Adam's two moments per variable, made at the first step; nothing per step
print("new tensors after 600 steps:", nf.memory().num_tensors - before)
print("a:", a.data_sync()[0])
print("b:", b.data_sync()[0])
print("c:", c.data_sync()[0])
print("d:", d.data_sync()[0])
