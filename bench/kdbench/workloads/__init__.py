"""The workloads, in the order a run takes them (bench/README.md says what
each measures).  Each module has NAME and systems(ctx, tb): a list of
(system, roles, function): the tables (data.Tables roles) the system reads
besides base, and function(ctx, tb, system), which measures that system on
one data set and size and returns its result rows."""
from . import build, knn10, allknn, knnjoin, radius, writes

WORKLOADS = {m.NAME: m for m in [build, knn10, allknn, knnjoin, radius, writes]}
