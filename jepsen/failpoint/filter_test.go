package failpoint

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockd/lockd/test/proccluster"
)

func TestFilterRules(t *testing.T) {
	a := &proccluster.Node{ID: "n1", IP: "127.0.0.2"}
	b := &proccluster.Node{ID: "n2", IP: "127.0.0.3"}
	c := &proccluster.Node{ID: "n3", IP: "127.0.0.4"}
	rules := func(links []link, rule string, dataOnly bool) []string {
		var out []string
		for _, r := range filterRules(links, rule, dataOnly) {
			out = append(out, strings.Join(r, " "))
		}
		return out
	}
	tests := []struct {
		name  string
		links []link
		rule  string
		data  bool
		want  []string
	}{
		{"both ways, rules on both ends, once each", []link{{a, b, "both"}, {b, a, "both"}}, "drop", false, []string{
			"-p tcp -s 127.0.0.3 -d 127.0.0.2 -j REJECT --reject-with tcp-reset",
			"-p tcp -s 127.0.0.2 -d 127.0.0.3 -j REJECT --reject-with tcp-reset",
		}},
		{"out is from the rule's node", []link{{a, b, "out"}, {a, c, "out"}}, "blackhole", false, []string{
			"-p tcp -s 127.0.0.2 -d 127.0.0.3 -j DROP",
			"-p tcp -s 127.0.0.2 -d 127.0.0.4 -j DROP",
		}},
		{"in is to the rule's node", []link{{a, c, "in"}}, "blackhole", false, []string{
			"-p tcp -s 127.0.0.4 -d 127.0.0.2 -j DROP",
		}},
	}
	oneway := rules([]link{{a, b, "out"}, {a, c, "out"}}, "drop", true)
	if len(oneway) != 2*12 {
		t.Fatalf("data-only rules for two links: %d, want 12 per link", len(oneway))
	}
	for _, want := range []string{
		"-p tcp -s 127.0.0.2 -d 127.0.0.3 -m u32 --u32 0>>22&0x3C=20&&0>>22&0x3C@12>>26&0x3C=20 -m length --length 41:65535 -j REJECT --reject-with tcp-reset",
		"-p tcp -s 127.0.0.2 -d 127.0.0.4 -m u32 --u32 0>>22&0x3C=20&&0>>22&0x3C@12>>26&0x3C=60 -m length --length 81:65535 -j REJECT --reject-with tcp-reset",
	} {
		if !slices.Contains(oneway, want) {
			t.Errorf("data-only rules lack %q:\n%s", want, strings.Join(oneway, "\n"))
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rules(tt.links, tt.rule, tt.data); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
