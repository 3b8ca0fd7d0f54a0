package failpoint

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockd/lockd/jepsen/cluster"
)

func TestFilterRules(t *testing.T) {
	a := &cluster.Node{ID: "n1", IP: "127.0.0.2"}
	b := &cluster.Node{ID: "n2", IP: "127.0.0.3"}
	c := &cluster.Node{ID: "n3", IP: "127.0.0.4"}
	rules := func(links []link, rule string) []string {
		var out []string
		for _, r := range filterRules(links, rule) {
			out = append(out, strings.Join(r, " "))
		}
		return out
	}
	tests := []struct {
		name  string
		links []link
		rule  string
		want  []string
	}{
		{"both ways, rules on both ends, once each", []link{{a, b, "both"}, {b, a, "both"}}, "drop", []string{
			"-p tcp -s 127.0.0.3 -d 127.0.0.2 -j REJECT --reject-with tcp-reset",
			"-p tcp -s 127.0.0.2 -d 127.0.0.3 -j REJECT --reject-with tcp-reset",
		}},
		{"out is from the rule's node", []link{{a, b, "out"}, {a, c, "out"}}, "blackhole", []string{
			"-p tcp -s 127.0.0.2 -d 127.0.0.3 -j DROP",
			"-p tcp -s 127.0.0.2 -d 127.0.0.4 -j DROP",
		}},
		{"in is to the rule's node", []link{{a, c, "in"}}, "blackhole", []string{
			"-p tcp -s 127.0.0.4 -d 127.0.0.2 -j DROP",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rules(tt.links, tt.rule); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
