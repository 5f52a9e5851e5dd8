"""data.py: the data sets, generated in SQL from a seed, and their tables.

Every coordinate is kb_u(seed, id, j) (setup.sql), a hash of the row's id,
so a data set is the same on every server whatever order rows are made in.

  uniform2   x, y uniform in [0, 1e6)
  uniform3   x, y, z uniform in [0, 1e6)  (float8[]; PostGIS POINT Z)
  clustered  95% in 1000 Gaussian clusters (sigma 300 to 6000, sizes skewed
             so a few clusters hold most points), 5% uniform background
  dup        uniform, snapped to a grid of about n/10 cells: ~10 rows share
             each location
  lonlat     uniform on the sphere, as lon/lat degrees (PostGIS SRID 4326)
  geography  the lonlat points as PostGIS geography (sphere distances in
             metres); only with kdgpu_postgis, whose kdgpu index and
             functions take geography, against PostGIS's geography GiST

For a data set and size the tables are kb_<set>_<n>_<role>:
  base    id, p (point), v (float8[]) or g (geography); primary key on id;
          no other index.  The sequential scans and the kd_* functions of
          the -noindex systems read this table.
  gist, spgist, kd   copies of base with a GiST, SP-GiST or kdgpu index (the
          kd_* functions read kd and search its index's tree)
  geom    id, g geometry with a PostGIS GiST index (n-D for 3-D data;
          geography for the geography data set)
  kdgeom  the same geometry with a kdgpu index (kdgpu_postgis)
  q       n/10 query points of the same distribution (another seed), for
          the kNN join; primary key on id
"""
import os

from . import pg

CLUSTERS = 1000


class Dataset:
    """One kind of generated data."""

    def __init__(self, name, dim, srid, domain, kind=None):
        self.name = name
        self.dim = dim
        self.srid = srid
        self.domain = domain        # (low, high) per dimension, for random queries
        # the column's type: point (2-D), array (float8[]) or geography
        self.kind = kind or ("point" if dim == 2 else "array")

    def coords(self, seed, i, grid_n):
        """SQL expressions of the coordinates of row i."""
        u = lambda j, s=seed, k=i: "kb_u(%d, %s, %d)" % (s, k, j)
        if self.name in ("uniform2", "uniform3"):
            return ["1e6 * %s" % u(j) for j in range(self.dim)]
        if self.name == "dup":
            g = "greatest(1, floor(sqrt(%d / 10.0)))" % grid_n
            return ["(floor(%s * %s) + 0.5) * 1e6 / %s" % (u(j), g, g) for j in range(2)]
        if self.name in ("lonlat", "geography"):
            return ["360 * %s - 180" % u(0), "degrees(asin(2 * %s - 1))" % u(1)]
        if self.name == "clustered":
            c = "floor(%d * %s ^ 2)::int8" % (CLUSTERS, u(3))
            cu = lambda j: "kb_u(%d, %s, %d)" % (seed + 7, c, j)
            rho = "300 * exp(3 * %s) * sqrt(-2 * ln(1 - %s))" % (cu(2), u(4))
            th = "2 * pi() * %s" % u(5)
            bg = "%s < 0.05" % u(2)
            return ["CASE WHEN %s THEN 1e6 * %s ELSE 1e6 * %s + %s * cos(%s) END"
                    % (bg, u(0), cu(0), rho, th),
                    "CASE WHEN %s THEN 1e6 * %s ELSE 1e6 * %s + %s * sin(%s) END"
                    % (bg, u(1), cu(1), rho, th)]
        raise ValueError(self.name)

    def point_sql(self, seed, i, grid_n):
        """SQL expression of row i's point (point or float8[])."""
        c = self.coords(seed, i, grid_n)
        if self.kind == "geography":
            return "ST_SetSRID(ST_MakePoint(%s, %s), %d)::geography" % (c[0], c[1], self.srid)
        if self.kind == "point":
            return "point(%s, %s)" % tuple(c)
        return "ARRAY[%s]::float8[]" % ", ".join(c)


DATASETS = {d.name: d for d in [
    Dataset("uniform2", 2, 0, [(0, 1e6)] * 2),
    Dataset("uniform3", 3, 0, [(0, 1e6)] * 3),
    Dataset("clustered", 2, 0, [(0, 1e6)] * 2),
    Dataset("dup", 2, 0, [(0, 1e6)] * 2),
    Dataset("lonlat", 2, 4326, [(-180, 180), (-90, 90)]),
    Dataset("geography", 2, 4326, [(-180, 180), (-90, 90)], kind="geography"),
]}


class Tables:
    """The tables and SQL snippets of one data set at one size."""

    def __init__(self, ds, n, seed, caps, spgist_opclass, kd_mwm):
        self.ds, self.n, self.seed, self.caps = ds, n, seed, caps
        # maintenance_work_mem of the kdgpu indexes the workloads search
        self.kd_mwm = kd_mwm
        self.prefix = "kb_%s_%d" % (ds.name, n)
        self.geography = ds.kind == "geography"
        self.col = {"point": "p", "array": "v", "geography": "g"}[ds.kind]
        self.cast = {"point": "::point", "array": "::float8[]", "geography": "::geography"}[ds.kind]
        self.gcast = "::geography" if self.geography else "::geometry"
        self.gop = "<->" if ds.dim == 2 else "<<->>"
        # point peers (GiST, SP-GiST on point) exist for 2-D point data
        self.point_peers = ds.kind == "point"
        self.nq = max(1, n // 10)
        self.spgist_opclass = spgist_opclass

    def t(self, role):
        """The name of a role's table."""
        return "%s_%s" % (self.prefix, role)

    def roles(self):
        """The tables this data set has on this server."""
        r = ["base", "kd", "q"]
        if self.point_peers:
            r += ["gist", "spgist"]
        if self.caps["postgis"]:
            r.append("geom")
        if self.caps["kdgpu_postgis"] and not self.geography:
            r.append("kdgeom")
        return r

    def geom_sql(self, expr):
        """SQL turning a point or float8[] expression into a geometry (a
        geography stays itself)."""
        if self.geography:
            return expr
        if self.ds.dim == 2:
            return "ST_SetSRID(ST_MakePoint((%s)[0], (%s)[1]), %d)" % (expr, expr, self.ds.srid)
        return "ST_MakePoint((%s)[1], (%s)[2], (%s)[3])" % (expr, expr, expr)

    def marker(self, made):
        """The base table's comment: what made the tables."""
        return "kdbench seed=%d n=%d roles=%s" % (self.seed, self.n, ",".join(made))

    def ready(self, needed):
        """Whether an earlier run with these settings made the tables of
        these roles."""
        comment = pg.value("SELECT obj_description(to_regclass(%s), 'pg_class')"
                           % pg.quote(self.t("base"))) or ""
        head, _, made = comment.partition(" roles=")
        return head == self.marker([]).partition(" roles=")[0] and \
            set(needed) <= set(made.split(","))

    def create(self, needed):
        """Generate the data and make base and the tables of the needed roles
        (no point indexes yet).  Rows are made in id ranges by one session
        per core at once (kb_u makes a row's values from its id alone, so
        the data are the same as one session's)."""
        col, base = self.col, self.t("base")
        made = ["base"] + [r for r in self.roles() if r != "base" and r in needed]
        head = "SET client_min_messages = warning;\n"
        pg.psql(head + "DROP TABLE IF EXISTS %s CASCADE;" % ", ".join(
            self.t(r) for r in ["base", "gist", "spgist", "kd", "geom", "kdgeom", "q"]))
        self.fill(base, "i AS id, %s AS %s" % (self.ds.point_sql(self.seed, "i", self.n), col),
                  "generate_series(%d, %d) i", self.n)
        pg.psql(head + "SET maintenance_work_mem = '1GB';\nALTER TABLE %s ADD PRIMARY KEY (id);"
                % base)
        for r in made:
            if r == "q":
                self.fill(self.t(r), "i AS id, %s AS %s"
                          % (self.ds.point_sql(self.seed + 1, "i", self.n), col),
                          "generate_series(%d, %d) i", self.nq)
                pg.psql(head + "ALTER TABLE %s ADD PRIMARY KEY (id);" % self.t(r))
            elif r in ("gist", "spgist", "kd"):
                self.fill(self.t(r), "id, %s" % col,
                          base + " WHERE id BETWEEN %d AND %d", self.n)
            elif r in ("geom", "kdgeom"):
                self.fill(self.t(r), "id, %s AS g" % self.geom_sql(col),
                          base + " WHERE id BETWEEN %d AND %d", self.n)
        pg.psql(head + "VACUUM ANALYZE %s;\nCOMMENT ON TABLE %s IS %s;"
                % (", ".join(self.t(r) for r in made), base, pg.quote(self.marker(made))))

    def fill(self, table, select, source, rows):
        """Create a table of SELECT `select` FROM `source`, where source has
        two %d for an id range, over ids 1..rows: empty first, then filled
        by several sessions at once, a range each."""
        pg.psql("CREATE TABLE %s AS SELECT %s FROM %s WITH NO DATA;"
                % (table, select, source % (1, 0)))
        jobs = min(os.cpu_count() or 1, 16) if rows >= 1000000 else 1
        step = (rows + jobs - 1) // jobs
        pg.psql_all(["INSERT INTO %s SELECT %s FROM %s;"
                     % (table, select, source % (lo, min(rows, lo + step - 1)))
                     for lo in range(1, rows + 1, step)])

    def drop(self):
        """Drop this data set's tables."""
        pg.psql("SET client_min_messages = warning;\nDROP TABLE IF EXISTS %s CASCADE;"
                % ", ".join(self.t(r) for r in ["base", "gist", "spgist", "kd", "geom", "kdgeom", "q"]))

    def index_sql(self, role):
        """CREATE INDEX for a role's table."""
        t = self.t(role)
        using = {
            "gist": "gist (p)",
            "spgist": "spgist (p %s)" % self.spgist_opclass,
            "kd": "kdgpu (%s)" % self.col,
            "geom": "gist (g)" if self.ds.dim == 2 else "gist (g gist_geometry_ops_nd)",
            "kdgeom": "kdgpu (g)" if self.ds.dim == 2 else "kdgpu (g kd_geometry_nd_ops)",
        }[role]
        return "CREATE INDEX %s_idx ON %s USING %s" % (t, t, using)

    def has_index(self, role):
        """Whether a role's table has its index."""
        return pg.value("SELECT to_regclass(%s) IS NOT NULL" % pg.quote(self.t(role) + "_idx")) == "t"

    def ensure_index(self, role, settings=""):
        """Build a role's index if it is missing (untimed): a kdgpu index at
        --build-mwm (a forest at the server's default), the peers' at 4GB."""
        if not self.has_index(role):
            mwm = self.kd_mwm if role in ("kd", "kdgeom") else "4GB"
            pg.psql("SET maintenance_work_mem = %s;\n%s\n%s;\nANALYZE %s;"
                    % (pg.quote(mwm), settings, self.index_sql(role), self.t(role)))

    def prewarm(self, role):
        """Write out what earlier work left dirty (CHECKPOINT, so that no
        system is timed during a checkpoint that another's build or inserts
        set off), then read a role's table and its indexes into shared
        buffers (pg_prewarm), so that latencies are timed on a warm cache
        whatever each index's build left there (SP-GiST builds through
        shared buffers, GiST's sorted build and kdgpu's write their pages
        past them)."""
        pg.psql("CHECKPOINT;")
        if not self.caps["pg_prewarm"]:
            return
        t = pg.quote(self.t(role))
        pg.psql("SELECT sum(pg_prewarm(oid)) FROM (SELECT %s::regclass AS oid UNION ALL "
                "SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass) s;" % (t, t))

    def sample_args(self, role, count, seed):
        """Text forms of `count` data points, chosen by a hash of the seed (the
        same rows for every role), in the type of a role's table."""
        col = self.geom_sql("t." + self.col) if role in ("geom", "kdgeom") else "t." + self.col
        rows = pg.psql(
            "SELECT %s::text FROM %s t JOIN (SELECT j, 1 + floor(%d * kb_u(%d, j, 9))::int8 AS id "
            "FROM generate_series(1, %d) j) s USING (id) ORDER BY s.j"
            % (col, self.t("base"), self.n, seed, count))
        return [r[0] for r in rows]

    def random_point_sql(self, var_prefix=":u"):
        """For pgbench: a query point uniform over the data set's domain, from
        the pgbench variables :u0, :u1, ... (integers in [0, 1000000]); as
        the column's type and as the geom table's."""
        cs = ["(%s + %s%d * %g)" % (lo, var_prefix, j, (hi - lo) / 1e6)
              for j, (lo, hi) in enumerate(self.ds.domain)]
        if self.geography:
            g = "ST_SetSRID(ST_MakePoint(%s, %s), %d)::geography" % (cs[0], cs[1], self.ds.srid)
            return g, g
        if self.ds.dim == 2:
            return "point(%s, %s)" % tuple(cs), \
                   "ST_SetSRID(ST_MakePoint(%s, %s), %d)" % (cs[0], cs[1], self.ds.srid)
        return "ARRAY[%s]::float8[]" % ", ".join(cs), "ST_MakePoint(%s)" % ", ".join(cs)
