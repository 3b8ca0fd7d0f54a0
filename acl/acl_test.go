package acl

import "testing"

func TestAllowed(t *testing.T) {
	admin := Token{AccessorID: "a", Admin: true}
	jobs := Token{AccessorID: "j", Rules: []Rule{
		{Kind: Lock, Prefix: "jobs/", Access: Write},
		{Kind: Election, Prefix: "", Access: Read},
	}}
	reader := Token{AccessorID: "r", Rules: []Rule{{Kind: Lock, Prefix: "jobs/", Access: Read}}}
	none := Token{AccessorID: "n"}

	lock := func(name string, a Access) Action { return Action{Kind: Lock, Name: name, Access: a} }
	elect := func(name string, a Access) Action { return Action{Kind: Election, Name: name, Access: a} }
	adminOp := Action{Admin: true}

	for _, tc := range []struct {
		name string
		tok  Token
		a    Action
		want bool
	}{
		{"admin writes any lock", admin, lock("x", Write), true},
		{"admin administers", admin, adminOp, true},
		{"anything: any token", none, Anything, true},
		{"write on prefix", jobs, lock("jobs/a", Write), true},
		{"write includes read", jobs, lock("jobs/a", Read), true},
		{"prefix is a prefix of the name, not a segment", jobs, lock("jobs/", Write), true},
		{"outside the prefix", jobs, lock("job", Write), false},
		{"other prefix", jobs, lock("other/jobs/a", Read), false},
		{"rule of the other kind", jobs, elect("jobs/a", Write), false},
		{"empty prefix covers all", jobs, elect("anything", Read), true},
		{"read does not give write", jobs, elect("anything", Write), false},
		{"read token reads", reader, lock("jobs/a", Read), true},
		{"read token cannot write", reader, lock("jobs/a", Write), false},
		{"rules never administer", jobs, adminOp, false},
		{"no rules, no lock", none, lock("jobs/a", Read), false},
	} {
		if got := Allowed(tc.tok, tc.a); got != tc.want {
			t.Errorf("%s: Allowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOwnsAndSessions(t *testing.T) {
	admin := Token{AccessorID: "a", Admin: true}
	w := Token{AccessorID: "w", Rules: []Rule{{Kind: Lock, Prefix: "x", Access: Write}}}
	r := Token{AccessorID: "r", Rules: []Rule{{Kind: Lock, Prefix: "x", Access: Read}}}
	switch {
	case !Owns(w, "w"), Owns(w, "r"), Owns(w, ""), !Owns(admin, "w"), !Owns(admin, ""):
		t.Error("Owns: a token owns its own sessions only; admin owns all, ownerless ones included")
	}
	if !CanWriteSomething(w) || CanWriteSomething(r) || !CanWriteSomething(admin) {
		t.Error("CanWriteSomething: a write rule or admin is needed")
	}
}

func TestHashAndMatches(t *testing.T) {
	tok := Token{Hash: Hash("s3cret-s3cret-s3cret")}
	if !Matches(tok, "s3cret-s3cret-s3cret") || Matches(tok, "s3cret-s3cret-s3creT") || Matches(tok, "") {
		t.Error("Matches must accept the secret only")
	}
	if len(tok.Hash) != 64 {
		t.Errorf("hash %q: want hex SHA-256", tok.Hash)
	}
}

func TestParseRuleAndValidate(t *testing.T) {
	r, err := ParseRule("lock:jobs/:write")
	if err != nil || r != (Rule{Kind: Lock, Prefix: "jobs/", Access: Write}) || r.String() != "lock:jobs/:write" {
		t.Fatalf("ParseRule = %+v, %v", r, err)
	}
	if r, err := ParseRule("election::read"); err != nil || r.Prefix != "" {
		t.Fatalf("empty prefix: %+v, %v", r, err)
	}
	for _, bad := range []string{"", "lock:x", "lock:x:admin", "queue:x:read", "lock:a:b:write"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"short", "has space in it okay", string(make([]byte, MaxSecret+1))} {
		if ValidateSecret(bad) == nil {
			t.Errorf("ValidateSecret(%q) accepted", bad)
		}
	}
	if err := ValidateSecret("0123456789abcdef"); err != nil {
		t.Error(err)
	}
}

func TestValidate_Limits(t *testing.T) {
	rules := []Rule{{Kind: Key, Prefix: "app/", Access: Write}}
	for _, ok := range []Token{
		{Rules: rules},
		{Rules: rules, MaxKeys: 10, MaxBytes: 4096},
		{Rules: rules, MaxKeys: MaxLimit, MaxBytes: MaxLimit},
		{Admin: true},
	} {
		if err := Validate(ok); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
	for _, bad := range []Token{
		{Rules: rules, MaxKeys: -1},
		{Rules: rules, MaxBytes: -1},
		{Rules: rules, MaxBytes: MaxLimit + 1},
		{Admin: true, MaxKeys: 1},
		{Admin: true, MaxBytes: 1},
	} {
		if err := Validate(bad); err == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
}
