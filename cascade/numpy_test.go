package cascade

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// pythonPath is Debian's interpreter, whose python3-numpy the numpy peer imports (CI
// installs python3-pandas, which brings it).
const pythonPath = "/usr/bin/python3"

// numpyOutput is what testdata/numpy_threshold.py prints.
type numpyOutput struct {
	Seconds      float64   `json:"seconds"`
	MeanFraction float64   `json:"mean_fraction"`
	BlastRadius  []float64 `json:"blast_radius"`
}

func requireNumpy(tb testing.TB) {
	tb.Helper()
	if err := exec.Command(pythonPath, "-c", "import numpy").Run(); err != nil {
		tb.Skipf("skipping the numpy comparison: %s cannot import numpy (%v); install it with apt-get install -y python3-numpy", pythonPath, err)
	}
}

// runNumpy writes the request's network to a file and runs the peer on it with the
// request's runs and recovery rate.
func runNumpy(tb testing.TB, in Input) numpyOutput {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "request.json")
	b, err := json.Marshal(in)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	recovery := 0.0
	if in.RecoveryRate != nil {
		recovery = *in.RecoveryRate
	}
	cmd := exec.Command(pythonPath, filepath.Join("testdata", "numpy_threshold.py"), path,
		strconv.Itoa(*in.Simulations), "1", strconv.FormatFloat(recovery, 'g', -1, 64))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("numpy_threshold.py: %v\n%s", err, stderr.String())
	}
	var p numpyOutput
	if err := json.Unmarshal(out, &p); err != nil {
		tb.Fatalf("numpy_threshold.py output: %v", err)
	}
	return p
}

// TestNumpyPeerAgrees: the peer makes the same model: every node's blast radius equals the
// engine's (a deterministic cascade; within 1e-9 for the order of the sums), and the mean
// failed fraction of its 2,000 runs is within sampling error of the engine's (other
// random draws: the two estimates' standard errors are below 0.005 each).
func TestNumpyPeerAgrees(t *testing.T) {
	requireNumpy(t)
	in := benchInput(1000, 10, 2000)
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	p := runNumpy(t, in)
	byID := map[string]float64{}
	for _, nd := range res.Nodes {
		if nd.BlastRadius != nil {
			byID[nd.ID] = *nd.BlastRadius
		}
	}
	if len(p.BlastRadius) != len(in.Network.Nodes) || len(byID) != len(in.Network.Nodes) {
		t.Fatalf("blast radii: numpy %d, engine %d, nodes %d", len(p.BlastRadius), len(byID), len(in.Network.Nodes))
	}
	for i, nd := range in.Network.Nodes {
		if d := math.Abs(p.BlastRadius[i] - byID[nd.ID]); d > 1e-9 {
			t.Fatalf("node %s: blast radius %v by numpy, %v by the engine", nd.ID, p.BlastRadius[i], byID[nd.ID])
		}
	}
	got := res.Scenarios[0].ExpectedFailedFraction
	if d := math.Abs(p.MeanFraction - got); d > 0.02 {
		t.Errorf("mean failed fraction: numpy %.4f, engine %.4f", p.MeanFraction, got)
	}
	t.Logf("mean failed fraction: numpy %.4f, engine %.4f; 1,000 blast radii equal", p.MeanFraction, got)
}

// BenchmarkThresholdVsNumpy is the contract's speed target — Analyze on 1,000 nodes, 10,003
// edges, 10,000 runs of one random failure and the sweep of every node — against the numpy
// peer making the same runs and sweep (testdata/numpy_threshold.py; its own timing of the
// work, the interpreter's start and the network's read left out), in the same run. Metric
// numpy_over_engine: the peer's seconds over the engine's.
func BenchmarkThresholdVsNumpy(b *testing.B) {
	requireNumpy(b)
	in := benchInput(1000, 10, 10_000)
	var engine time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
		engine += time.Since(start)
	}
	b.StopTimer()
	peer := runNumpy(b, in)
	perOp := engine.Seconds() / float64(b.N)
	b.ReportMetric(peer.Seconds, "numpy-s")
	b.ReportMetric(peer.Seconds/perOp, "numpy_over_engine")
}
