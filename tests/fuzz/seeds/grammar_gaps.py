x = a, *[1]
def f(g):
    return *[None] * 3, *g

def h():
    x = (bar.
baz)
    return x
