"""(a) Tensors, tidy and memory: the ndflow port of tensors_tidy_memory.js, line for line."""

import asyncio

import ndflow as nf


async def main():
    a = nf.tensor2d([[1, 2], [3, 4]])
    b = nf.tensor2d([[5, 6], [7, 8]])
    print("shape:", a.shape, "dtype:", a.dtype, "rank:", a.rank)

    c = nf.mat_mul(a, b)
    print("matMul:", await c.array())

    # tidy frees every tensor made inside the function but the one it returns
    y = nf.tidy(lambda: nf.sum(nf.add(nf.square(a), b)))
    print("sum(a^2 + b):", y.data_sync()[0])
    print("tensors after tidy:", nf.memory().num_tensors)

    squares = a.square()  # outside tidy: yours to dispose
    z = squares.mean()
    print("mean(a^2):", (await z.data())[0])
    print("tensors before dispose:", nf.memory().num_tensors)

    nf.dispose([a, b, c, y, squares, z])
    print("tensors after dispose:", nf.memory().num_tensors)


asyncio.run(main())
