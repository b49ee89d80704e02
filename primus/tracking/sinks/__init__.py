"""One module per tracker. Each imports its tracker lazily, inside ``open`` on its worker thread,
so ``import primus.tracking`` stays cheap; sinks never import each other."""
