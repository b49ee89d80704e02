"""The built-in trackers, one module each (TensorBoard, W&B, MLflow, Comet), what every sink is built with
(``context.SinkContext``) and every sink by name (``registry``). Each imports its tracker lazily, inside ``open``
on its worker thread, so ``import primus.tracking`` stays cheap; trackers never import each other."""
