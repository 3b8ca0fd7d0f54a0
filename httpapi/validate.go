package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/api"
)

// pathName returns the lock or election name in r's path, checked with
// api.ValidateName.
func pathName(r *http.Request) (string, error) {
	name := mux.Vars(r)["name"]
	if err := api.ValidateName(name); err != nil {
		return "", badRequest("%s", err.Error())
	}
	return name, nil
}

// newName returns the lock or election name in r's path for a request
// that may create the object (acquire, campaign): a valid name whose last
// segment is not one of verbs, the kind's POST verbs. Requests on an
// object that exists (release, check, proclaim, resign) take any valid
// name, so that one created before the verbs were reserved can still be
// let go of.
func newName(r *http.Request, kind string, verbs []string) (string, error) {
	name, err := pathName(r)
	if err != nil {
		return "", err
	}
	if v := api.VerbSuffix(name, verbs); v != "" {
		article := "a"
		if strings.ContainsRune("aeiou", rune(kind[0])) {
			article = "an"
		}
		return "", badRequest("%s name %q ends in \"/%s\": the last segment of %s %s name may not be %s, which the API's paths use",
			kind, name, v, article, kind, orList(verbs))
	}
	return name, nil
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// required returns an error naming field when value is empty.
func required(field, value string) error {
	if value == "" {
		return badRequest("%s is required", field)
	}
	return nil
}

// checkRange returns an error naming field when d is outside [lo, hi].
func checkRange(field string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return badRequest("%s %s is out of range: it must be between %s and %s", field, d, lo, hi)
	}
	return nil
}

// checkMaxLen returns an error naming field when value is longer than n
// bytes.
func checkMaxLen(field, value string, n int) error {
	if len(value) > n {
		return badRequest("%s is %d bytes long; the limit is %d", field, len(value), n)
	}
	return nil
}

// fillSession checks a session request and fills in the defaults of its
// omitted fields, so that the Service sees concrete values.
// ttl is the requested TTL, nil when the request names none.
func fillSession(req *api.CreateSessionRequest, ttl *api.Duration) error {
	req.TTL = api.Duration(api.DefaultTTL)
	if ttl != nil {
		req.TTL = *ttl
	}
	if err := checkRange("ttl", req.TTL.D(), api.MinTTL, api.MaxTTL); err != nil {
		return err
	}
	if req.LockDelay == nil {
		d := api.Duration(api.DefaultLockDelay)
		req.LockDelay = &d
	}
	if err := checkRange("lock_delay", req.LockDelay.D(), 0, api.MaxLockDelay); err != nil {
		return err
	}
	return checkMaxLen("name", req.Name, api.MaxSessionNameLen)
}

// fillAcquire checks an acquire request and fills in the default mode.
func fillAcquire(req *api.AcquireRequest) error {
	if err := required("session", req.Session); err != nil {
		return err
	}
	switch {
	case req.Limit < 0 || req.Limit > api.MaxLimit:
		return badRequest("limit %d is out of range: it must be between 1 and %d for a semaphore, or 0 (absent) for an exclusive or shared lock", req.Limit, api.MaxLimit)
	case req.Limit > 0 && req.Mode == api.ModeShared:
		return badRequest("a semaphore (limit %d) takes no mode %q: each holder holds one slot of it exclusively; leave mode out", req.Limit, api.ModeShared)
	}
	switch req.Mode {
	case "":
		req.Mode = api.ModeExclusive
	case api.ModeExclusive, api.ModeShared:
	default:
		return badRequest("mode %q is not valid: use %q or %q", req.Mode, api.ModeExclusive, api.ModeShared)
	}
	return checkRange("wait", req.Wait.D(), 0, api.MaxWait)
}

// checkCampaign checks a campaign request.
func checkCampaign(req *api.CampaignRequest) error {
	if err := required("session", req.Session); err != nil {
		return err
	}
	if err := checkMaxLen("value", req.Value, api.MaxValueLen); err != nil {
		return err
	}
	return checkRange("wait", req.Wait.D(), 0, api.MaxWait)
}

// checkProclaim checks a proclaim request.
func checkProclaim(req *api.ProclaimRequest) error {
	if err := required("session", req.Session); err != nil {
		return err
	}
	return checkMaxLen("value", req.Value, api.MaxValueLen)
}

// fillMember checks a member request and normalises its HTTP address to an
// http:// or https:// URL. Leader and LastContact are reported by the
// cluster, never set by a request, so they are cleared; Voter is the role
// the request asks for (see api.AddMember) and is kept.
func fillMember(m *api.Member) error {
	for _, f := range []struct{ name, value string }{{"id", m.ID}, {"peer", m.Peer}, {"http", m.HTTP}} {
		if err := required(f.name, f.value); err != nil {
			return err
		}
	}
	if err := checkHostPort("peer", m.Peer); err != nil {
		return err
	}
	u, err := normaliseHTTP(m.HTTP)
	if err != nil {
		return err
	}
	m.HTTP, m.Leader, m.LastContact = u, false, nil
	return nil
}

// normaliseHTTP turns "host:port" or "http[s]://host[:port][/]" into
// "scheme://host[:port]".
func normaliseHTTP(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		if err := checkHostPort("http", addr); err != nil {
			return "", err
		}
		return "http://" + addr, nil
	}
	u, err := url.Parse(addr)
	bare := err == nil && u.User == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == ""
	if !bare || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", badRequest("http %q is not valid: use host:port or a URL such as http://host:port", addr)
	}
	if p := u.Port(); p != "" {
		if err := checkHostPort("http", u.Host); err != nil {
			return "", err
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// checkHostPort returns an error naming field unless addr is host:port with
// a non-empty host and a port in 1..65535.
func checkHostPort(field, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host != "" {
		if n, perr := strconv.Atoi(port); perr == nil && n >= 1 && n <= 65535 {
			return nil
		}
	}
	return badRequest("%s %q is not valid: use host:port, such as 127.0.0.1:7401", field, addr)
}
