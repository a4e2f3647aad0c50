"""The reconciler: the loop that finds lost or stuck work in the database and puts it back on the queues."""
