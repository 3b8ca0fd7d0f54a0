package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/bench/load"
)

// apiResults are etcd's and lockd-etcd's etcd-API rows, made up so that
// every target has a known outcome; etcd also ran a locks row.
func apiResults() []Result {
	ms := time.Millisecond
	lease := func(rate float64, lapsed int64) load.Row {
		r := row(APILease, 1000, rate, ms, 5*ms)
		r.RaftEntries, r.Lapsed, r.Setup = zero(), lapsed, 2
		return r
	}
	settings := DefaultAPIOptions()
	return []Result{
		{System: LockdEtcd, Version: "lockd", Endpoints: []string{"a", "b", "c"}, Leader: "a", Callers: 64, API: &settings,
			Rows: []load.Row{row(APIMutex, 1, 600, 2*ms, 4*ms), row(APIMutex, 64, 2000, 30*ms, 60*ms),
				row(APIPut, 16, 900, 10*ms, 20*ms), lease(20000, 0), row(APILease, 100000, 9000, ms, 9*ms)}},
		{System: Etcd, Version: "etcd 3.7.3", Endpoints: []string{"a", "b", "c"}, Callers: 64, API: &settings,
			Rows: []load.Row{row("locks", 64, 1500, 20*ms, 45*ms), row(APIMutex, 1, 300, 4*ms, 8*ms), row(APIMutex, 64, 1600, 40*ms, 80*ms),
				row(APIPut, 16, 1000, 9*ms, 18*ms), lease(10000, 0), row(APILease, 100000, 6000, 2*ms, 20*ms)}},
	}
}

func apiTarget(t *testing.T, rep *APIReport, prefix string) Target {
	t.Helper()
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q in %+v", prefix, rep.Targets)
	return Target{}
}

func TestAPIReport_RatiosAndTargets(t *testing.T) {
	rep := NewReport(apiResults())
	api := rep.EtcdAPI
	if api == nil {
		t.Fatal("no etcd-API report")
	}
	var order []string
	for _, l := range api.Lines {
		order = append(order, apiRowName(l.Bench, l.N))
	}
	if want := []string{"Mutex Lock+Unlock, 1 workers (cycles/s)", "Mutex Lock+Unlock, 64 workers (cycles/s)", "Put, 16 workers (puts/s)",
		"KeepAliveOnce, 1000 leases (renewals/s)", "KeepAliveOnce, 100000 leases (renewals/s)"}; strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", order, want)
	}
	if l := api.Lines[0]; l.RateRatio != 2 || l.P50Ratio != 0.5 || l.P99Ratio != 0.5 {
		t.Errorf("mutex 1: ratios %v %v %v", l.RateRatio, l.P50Ratio, l.P99Ratio)
	}
	// The main report keeps etcd's locks row and none of the etcd-API rows.
	if len(rep.Lines) == 0 {
		t.Fatal("etcd's locks row is not in the main report")
	}
	for _, l := range rep.Lines {
		if isAPIBench(l.Bench) {
			t.Errorf("main report has %s %d", l.Bench, l.N)
		}
	}
	for prefix, want := range map[string]string{
		"no row worse": NotMet, // put 0.90x
		"Mutex Lock+Unlock cycles/s at 1 workers":     Met,
		"Mutex Lock+Unlock cycles/s at 64 workers":    NotMet, // 1.25x
		"KeepAliveOnce renewals/s over 1000 leases":   Met,
		"KeepAliveOnce renewals/s over 100000 leases": Met, // exactly 1.5x
	} {
		if tg := apiTarget(t, api, prefix); tg.Status != want {
			t.Errorf("%s: %s (%s), want %s", prefix, tg.Status, tg.Detail, want)
		}
	}
	if tg := apiTarget(t, api, "no row worse"); !strings.Contains(tg.Detail, "Put, 16 workers (puts/s) 0.90x") {
		t.Errorf("no-row-worse detail %q", tg.Detail)
	}

	// A row in which etcd completed nothing: lockd-etcd's rate is above
	// any multiple of it, and the row is not worse.
	res := apiResults()
	res[1].Rows[5] = load.Row{Bench: APILease, N: 100000, Seconds: 10, Errors: 128}
	zrep := NewReport(res).EtcdAPI
	if tg := apiTarget(t, zrep, "KeepAliveOnce renewals/s over 100000 leases"); tg.Status != Met || !strings.Contains(tg.Detail, "etcd completed none") {
		t.Errorf("etcd at 0/s: %s (%s)", tg.Status, tg.Detail)
	}
	if tg := apiTarget(t, zrep, "no row worse"); strings.Contains(tg.Detail, "100000") {
		t.Errorf("etcd at 0/s counts as worse: %s", tg.Detail)
	}
	var md bytes.Buffer
	NewReport(res).Markdown(&md)
	if want := "| KeepAliveOnce, 100000 leases (renewals/s) | 0 | 9000 | etcd completed none | - | 1.00 |"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}

	// A lapsed lease fails the keepalive target whatever the rate.
	res = apiResults()
	res[0].Rows[3].Lapsed = 1
	if tg := apiTarget(t, NewReport(res).EtcdAPI, "KeepAliveOnce renewals/s over 1000 leases"); tg.Status != NotMet {
		t.Errorf("with a lapse: %s", tg.Status)
	}
}

// A run of the etcd-API rows alone writes their block only; with the
// other rows too, both blocks.
func TestAPIReport_Markdown(t *testing.T) {
	res := apiResults()
	res[1].Rows = res[1].Rows[1:] // etcd without its locks row
	rep := NewReport(res)
	rep.Commit, rep.Command = "abc1234", "make bench-compare"
	var md, txt bytes.Buffer
	rep.Markdown(&md)
	rep.Print(&txt)
	out := md.String()
	for _, want := range []string{
		": etcd's v3 API, lockd and etcd through the same clientv3 code",
		"- **lockd-etcd:** lockd; endpoints a, b, c",
		"- **etcd:** etcd 3.7.3",
		"| Mutex Lock+Unlock, 1 workers (cycles/s) | 300 | 600 | 2.00x | 4.00 | 2.00 | 0.50x | 8.00 | 4.00 | 0.50x | 0 / 0 | 0.0 / 0.0 |",
		"| KeepAliveOnce, 1000 leases (renewals/s) | 10000 | 20000 | 2.00x |",
		"granted them in 2.0 s (500/s)",
		"| " + APINoWorseTarget + " | not met |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ZooKeeper side by side") || strings.Contains(txt.String(), "lockd/better peer") {
		t.Errorf("the main block was written for etcd-API rows alone:\n%s\n%s", out, txt.String())
	}
	if !strings.Contains(txt.String(), "[met] Mutex Lock+Unlock cycles/s at 1 workers") {
		t.Errorf("text report:\n%s", txt.String())
	}

	md.Reset()
	NewReport(append(results(), apiResults()...)).Markdown(&md)
	if out := md.String(); !strings.Contains(out, "ZooKeeper side by side") || !strings.Contains(out, "etcd's v3 API") {
		t.Errorf("want both blocks:\n%s", out)
	}

	// Without any etcd-API row, the report has none.
	if rep := NewReport(results()); rep.EtcdAPI != nil {
		t.Errorf("etcd-API report %+v from no etcd-API rows", rep.EtcdAPI)
	}
}
