package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestScaleDocQuickRun runs the command docs/scale.md shows, as written,
// from the repository's top (every mix briefly, against binaries it
// builds), and reads its report back: a knee for each mix with operations
// and no errors, the writer-lock figures read back from the journal fields
// for the mixes that write, and an agents line.
func TestScaleDocQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook and collab-web and runs them under load")
	}
	doc, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "```sh\n")
	if !ok {
		t.Fatal("docs/scale.md shows no sh block")
	}
	block, _, _ := strings.Cut(after, "```")
	if !strings.Contains(block, "go run ./bench/capacity -quick") {
		t.Fatalf("docs/scale.md's block is not the quick run:\n%s", block)
	}
	cmd := exec.Command("sh", "-c", block)
	cmd.Dir = "../.."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", block, err, out, stderr.String())
	}
	r, err := parseReport(string(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mixNames() {
		k, ok := r.knees[m+"/2"]
		switch {
		case !ok:
			t.Errorf("no knee for %s", m)
		case k.rate <= 0 || k.n < 1 || k.errors != 0:
			t.Errorf("%s: knee %+v", m, k)
		}
		writes := m == "lease" || m == "next" || m == "comment" || m == "refsfor" || m == "branch" || m == "api-comment"
		if writes && k.held <= 0 {
			t.Errorf("%s writes but its knee shows no time holding the writer lock: %+v", m, k)
		}
	}
	if r.agents[2] <= 0 {
		t.Errorf("no agents figure for 2 cores")
	}
	if t.Failed() {
		t.Log(string(out))
	}
}

// The agents figure is the hour divided by the forge time an agent-hour
// takes at each mix's knee.
func TestAgents(t *testing.T) {
	knees := []knee{
		// 100/s, 10 ms of CPU each; one write holding the lock 2 ms (median)
		{mix: "lease", cores: 1, level: level{ops: 100, elapsed: time.Second, cpu: time.Second},
			one: level{ops: 10, writes: 10, heldEach: []time.Duration{time.Millisecond, 2 * time.Millisecond, 9 * time.Millisecond}}},
		// 10/s, 40 ms of CPU each; two writes of 5 ms holding the lock alone
		{mix: "refsfor", cores: 1, level: level{ops: 10, elapsed: time.Second, cpu: 300 * time.Millisecond, webCPU: 100 * time.Millisecond},
			one: level{ops: 10, writes: 20, heldEach: []time.Duration{5 * time.Millisecond}}},
		{mix: "lease", cores: 2, level: level{ops: 1, elapsed: time.Second}},
	}
	d, err := parseDuty("lease=100,refsfor=10")
	if err != nil {
		t.Fatal(err)
	}
	// 100/100 + 10/10 = 2 s an agent-hour: 1800 agents.
	line := agents(d, knees, 1)
	r, err := parseReport("knee mix=lease cores=1 N=1 ops/s=1.0 x errors=0 refused=0 busy=0\n" + line)
	if err != nil {
		t.Fatal(err)
	}
	if r.agents[1] != 1800 {
		t.Errorf("agents %q: want n=1800", line)
	}
	// CPU: 100×10 ms + 10×40 ms = 1.4 s of one core's hour; the lock:
	// 100×2 ms + 10×10 ms = 0.3 s of its hour.
	if !strings.Contains(line, " cpu_bound=2571 lock_bound=12000 ") {
		t.Errorf("agents %q: want cpu_bound=2571 lock_bound=12000", line)
	}
	if line := agents(d, knees, 2); !strings.Contains(line, "n=? (no knee for refsfor)") {
		t.Errorf("a missing knee gives %q", line)
	}
	for _, bad := range []string{"lease", "lease=x", "nosuch=1", "lease=-1"} {
		if _, err := parseDuty(bad); err == nil {
			t.Errorf("duty %q accepted", bad)
		}
	}
}
