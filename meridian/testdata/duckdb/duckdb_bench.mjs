// The DuckDB peer of meridian's BenchmarkCSV1MVsDuckDB.
//
// Reads the benchmark CSV (id, email, amount, quantity, status, created_at) into a DuckDB
// table with 2 threads, runs the same 10 checks and the same column profile as the Go engine
// in SQL, and prints one JSON object in the form of pandas_bench.py's: the wall time of the
// work (reading included; starting node, loading DuckDB and opening the database excluded),
// the time of the read alone, the table's memory, and the results, so the Go side can check
// that both did the same work.
//
// Usage: node duckdb_bench.mjs CSV_PATH AS_OF_RFC3339 [THREADS]
import { DuckDBInstance } from '@duckdb/node-api';

const [path, asOf, threads = '2'] = process.argv.slice(2);
const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];
const EMAIL = '^[a-z0-9._]+@[a-z0-9.-]+\\.[a-z]{2,}$';
const TIMESTAMP = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2}))?$';
const INTEGER = '^[+-]?[0-9]+$';
const PARTIAL = 20;

const lit = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const db = await instance.connect();
await db.run(`SET threads=${Number(threads)}`);
const rows = async (sql) => (await db.runAndReadAll(sql)).getRowObjectsJS();
const num = (v) => (v === null || v === undefined ? null : Number(v));

// A row check: how many rows match bad, and the 0-based row numbers of the first 20.
async function rowCheck(bad) {
  const [r] = await rows(`SELECT count(*)::BIGINT AS n FROM t WHERE ${bad}`);
  const idx = await rows(`SELECT rowid AS i FROM t WHERE ${bad} ORDER BY rowid LIMIT ${PARTIAL}`);
  return { unexpected_count: num(r.n), index: idx.map((x) => num(x.i)) };
}

async function profileColumn(name, type) {
  const c = `"${name}"`;
  const [base] = await rows(`SELECT count(*) FILTER (WHERE ${c} IS NULL)::BIGINT AS nulls, count(DISTINCT ${c})::BIGINT AS distinct FROM t`);
  const tops = await rows(`SELECT count(*)::BIGINT AS n FROM t WHERE ${c} IS NOT NULL GROUP BY ${c} ORDER BY n DESC LIMIT 5`);
  const out = { null_count: num(base.nulls), distinct_count: num(base.distinct), top_counts: tops.map((x) => num(x.n)) };
  if (['BIGINT', 'INTEGER', 'DOUBLE'].includes(type)) {
    const [s] = await rows(`SELECT min(${c})::DOUBLE AS mn, max(${c})::DOUBLE AS mx, avg(${c})::DOUBLE AS mean, stddev_samp(${c})::DOUBLE AS sd,
      quantile_cont(${c}, [0.05, 0.5, 0.95])::DOUBLE[] AS q FROM t`);
    Object.assign(out, { inferred_type: type === 'DOUBLE' ? 'number' : 'integer', min: s.mn, max: s.mx, mean: s.mean, stddev: s.sd, p05: s.q[0], p50: s.q[1], p95: s.q[2] });
    return out;
  }
  // Type inference, narrowest first, as the engine does for text: each test looks for one
  // value that fails it and stops there; only the type that holds reads every value.
  const fails = async (cond) => (await rows(`SELECT 1 AS x FROM t WHERE ${c} IS NOT NULL AND NOT (${cond}) LIMIT 1`)).length > 0;
  let t = 'string';
  for (const [name, cond] of [['boolean', `regexp_full_match(${c}, '(?i)true|false')`], ['integer', `regexp_full_match(${c}, '${INTEGER}')`],
    ['number', `try_cast(${c} AS DOUBLE) IS NOT NULL`], ['timestamp', `regexp_full_match(${c}, '${TIMESTAMP}')`]]) {
    if (!(await fails(cond))) {
      t = name;
      break;
    }
  }
  const [s] = await rows(`SELECT min(length(${c}))::BIGINT AS lo, max(length(${c}))::BIGINT AS hi FROM t`);
  out.inferred_type = t;
  Object.assign(out, { min_length: num(s.lo), max_length: num(s.hi) });
  return out;
}

const t0 = performance.now();
// Only an empty field is null (the contract); created_at stays text (the engine keeps the
// text and parses it as a timestamp where a check needs one).
await db.run(`CREATE TABLE t AS SELECT * FROM read_csv(${lit(path)}, header = true, nullstr = '', types = {'created_at': 'VARCHAR'})`);
const readSeconds = (performance.now() - t0) / 1000;
const columns = await rows(`SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position`);
const [{ n }] = await rows('SELECT count(*)::BIGINT AS n FROM t');
const checks = {};
checks.id_not_null = await rowCheck('id IS NULL');
await db.run('CREATE TEMP TABLE dup AS SELECT id FROM t WHERE id IS NOT NULL GROUP BY id HAVING count(*) > 1');
checks.id_unique = await rowCheck('id IN (SELECT id FROM dup)');
checks.amount_not_null = await rowCheck('amount IS NULL');
checks.amount_range = await rowCheck('amount IS NOT NULL AND NOT (amount BETWEEN 0 AND 5000)');
checks.quantity_integer = await rowCheck('quantity IS NOT NULL AND quantity % 1 <> 0');
checks.status_known = await rowCheck(`status IS NOT NULL AND status NOT IN (${STATUSES.map(lit).join(', ')})`);
checks.email_format = await rowCheck(`email IS NOT NULL AND NOT regexp_matches(email, '${EMAIL}')`);
const [fence] = await rows(`SELECT quantile_cont(amount, 0.25) AS q1, quantile_cont(amount, 0.75) AS q3, avg(amount) AS mean FROM t`);
const iqr = fence.q3 - fence.q1;
const lo = fence.q1 - 1.5 * iqr, hi = fence.q3 + 1.5 * iqr; // as the engine computes them
checks.amount_outliers = await rowCheck(`amount IS NOT NULL AND (amount < '${lo}'::DOUBLE OR amount > '${hi}'::DOUBLE)`);
const [fresh] = await rows(`SELECT epoch(${lit(asOf)}::TIMESTAMPTZ - max(ts))::DOUBLE AS age FROM (SELECT try_cast(created_at AS TIMESTAMPTZ) AS ts FROM t) WHERE ts <= ${lit(asOf)}::TIMESTAMPTZ`);
checks.created_fresh = { observed_value: fresh.age };
checks.amount_mean = { observed_value: fence.mean };
const profile = {};
for (const { name, type } of columns) profile[name] = await profileColumn(name, type);
const seconds = (performance.now() - t0) / 1000;
const [mem] = await rows(`SELECT sum(memory_usage_bytes)::BIGINT AS b FROM duckdb_memory()`);
process.stdout.write(JSON.stringify({ seconds, read_seconds: readSeconds, frame_bytes: num(mem.b), rows: num(n), threads: Number(threads), checks, profile }));
