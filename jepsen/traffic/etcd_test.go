package traffic

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockd/lockd/jepsen/history"
)

// TestAddEtcdOps: the child's operations are added to the history as
// written, numbered by the recorder; a last line cut short (the child
// killed while writing) is left out and reported.
func TestAddEtcdOps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etcd-client.jsonl")
	body := `{"ID":7,"Client":500,"Lock":"jepsen/etcd/m0","Kind":"acquire","Session":"etcd-00000000000000ab","Token":12,"Status":"ok","Call":100,"Return":200}
{"ID":7,"Client":503,"Lock":"jepsen/etcd/m0","Kind":"read","Holder":"etcd-00000000000000ab","Token":12,"Status":"ok","Call":210,"Return":220}
{"ID":7,"Client":500,"Lock":"jepsen/et`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	n, err := addEtcdOps(rec, path)
	if n != 2 || err == nil {
		t.Fatalf("added %d, error %v; want 2 and an error for the cut line", n, err)
	}
	ops := rec.Ops()
	if len(ops) != 2 || ops[0].ID == ops[1].ID || ops[0].Token != 12 || ops[1].Holder != "etcd-00000000000000ab" || ops[1].Call != 210 {
		t.Fatalf("history %+v", ops)
	}
	if !IsEtcdName(ops[0].Lock) || IsEtcdName(ElectionName) {
		t.Error("IsEtcdName")
	}
}
