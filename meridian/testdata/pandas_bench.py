#!/usr/bin/python3
"""The pandas peer of meridian's BenchmarkCSV1M.

Reads the benchmark CSV (id, email, amount, quantity, status, created_at), runs the same
10 checks and the same column profile as the Go engine, and prints one JSON object: the
wall time of the work (reading included, interpreter start and imports excluded), the time
of read_csv alone, the DataFrame's memory (deep), and the results, so the Go side can check
that both did the same work.

Usage: pandas_bench.py CSV_PATH AS_OF_RFC3339
"""
import json
import sys
import time

import numpy as np
import pandas as pd

STATUSES = ["pending", "paid", "shipped", "delivered", "cancelled"]
EMAIL = r"^[a-z0-9._]+@[a-z0-9.-]+\.[a-z]{2,}$"
TIMESTAMP = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?$"
INTEGER = r"^[+-]?[0-9]+$"
PARTIAL = 20


def row_check(bad, element_count):
    idx = np.flatnonzero(bad.to_numpy())
    return {"unexpected_count": int(len(idx)), "index": idx[:PARTIAL].tolist(),
            "element_count": element_count}


def profile_column(s):
    out = {"null_count": int(s.isna().sum())}
    vc = s.value_counts(sort=True, dropna=True)
    out["distinct_count"] = int(len(vc))
    out["top_counts"] = [int(c) for c in vc.head(5).to_numpy()]
    if pd.api.types.is_numeric_dtype(s.dtype):
        x = s.dropna()
        integral = pd.api.types.is_integer_dtype(s.dtype)
        out["inferred_type"] = "integer" if integral else "number"
        q = x.quantile([0.05, 0.5, 0.95]).to_numpy()
        out.update(min=float(x.min()), max=float(x.max()), mean=float(x.mean()),
                   stddev=float(x.std()), p05=float(q[0]), p50=float(q[1]), p95=float(q[2]))
    else:
        # Type inference on the distinct values, narrowest first.
        u = pd.Series(vc.index.astype(str))
        if u.str.fullmatch("(?i)true|false").all():
            t = "boolean"
        elif u.str.fullmatch(INTEGER).all():
            t = "integer"
        elif pd.to_numeric(u, errors="coerce").notna().all():
            t = "number"
        elif u.str.fullmatch(TIMESTAMP).all():
            t = "timestamp"
        else:
            t = "string"
        out["inferred_type"] = t
        lens = u.str.len()
        out.update(min_length=int(lens.min()), max_length=int(lens.max()))
    return out


def main():
    path, as_of = sys.argv[1], pd.Timestamp(sys.argv[2])
    t0 = time.perf_counter()
    # Only an empty field is null (the contract), so pandas' default NA strings are off.
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    read_seconds = time.perf_counter() - t0
    n = len(df)
    checks = {}
    ids, amount, qty = df["id"], df["amount"], df["quantity"]
    checks["id_not_null"] = row_check(ids.isna(), n)
    checks["id_unique"] = row_check(ids.notna() & ids.duplicated(keep=False), n)
    checks["amount_not_null"] = row_check(amount.isna(), n)
    checks["amount_range"] = row_check(amount.notna() & ~amount.between(0, 5000), n)
    checks["quantity_integer"] = row_check(qty.notna() & (qty % 1 != 0), n)
    checks["status_known"] = row_check(df["status"].notna() & ~df["status"].isin(STATUSES), n)
    email = df["email"]
    checks["email_format"] = row_check(email.notna() & ~email.str.contains(EMAIL, regex=True, na=False), n)
    x = amount.dropna()
    q1, q3 = x.quantile(0.25), x.quantile(0.75)
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    checks["amount_outliers"] = row_check(amount.notna() & ((amount < lo) | (amount > hi)), n)
    ts = pd.to_datetime(df["created_at"], utc=True, errors="coerce")
    newest = ts[ts <= as_of].max()
    checks["created_fresh"] = {"observed_value": float((as_of - newest).total_seconds())}
    checks["amount_mean"] = {"observed_value": float(x.mean())}
    profile = {name: profile_column(df[name]) for name in df.columns}
    elapsed = time.perf_counter() - t0
    memory = int(df.memory_usage(deep=True).sum())  # after timing: it walks every string
    json.dump({"seconds": elapsed, "read_seconds": read_seconds, "frame_bytes": memory, "rows": n, "checks": checks, "profile": profile}, sys.stdout)


if __name__ == "__main__":
    main()
