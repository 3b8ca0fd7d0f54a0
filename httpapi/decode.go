package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockd/lockd/api"
)

// maxDrain is how much of an oversized body the server reads before it
// answers 413. A client that writes its whole body before it reads the
// response would otherwise see a connection reset instead of the answer.
const maxDrain = 4 << 20

// readBody reads r's body, at most bodyLimit(r) bytes (api.MaxBody but
// for the routes that take more). A longer body is read on up to maxDrain
// bytes, discarded, and answered too_large.
func readBody(r *http.Request) ([]byte, error) {
	limit := bodyLimit(r)
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if len(b) <= limit {
		return b, nil
	}
	// Beyond maxDrain, net/http itself closes the connection after the
	// answer (with "Connection: close").
	_, _ = io.CopyN(io.Discard, r.Body, maxDrain-int64(len(b)))
	return nil, api.Errorf(api.CodeTooLarge, "request body is larger than the limit of %d bytes", limit)
}

// bodyError is the answer to a failed read of a request's body: a body
// that did not arrive within the body timeout is request_timeout.
func bodyError(err error) *api.Error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return api.Errorf(api.CodeRequestTimeout, "the request body did not arrive within %v", bodyTimeoutOf(err))
	}
	return badRequest("cannot read the request body: %v", err)
}

// decodeBody decodes r's JSON body into v, which must point to a struct.
// Unknown fields, trailing data, wrong types, a body that is not a JSON
// object (null included) and text that is not valid Unicode (bytes that
// are not UTF-8, an escaped half of a surrogate pair), which encoding/json
// would turn into U+FFFD, are bad_request errors that say what is wrong.
// An empty body leaves v alone when optional is true and is an error
// otherwise.
func decodeBody(r *http.Request, v any, optional bool) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	switch string(bytes.TrimSpace(b)) {
	case "":
		if optional {
			return nil
		}
		return badRequest("request body is required")
	case "null":
		return badRequest("request body must be a JSON object, not null")
	}
	if i := invalidUTF8(b); i >= 0 {
		return badRequest("request body is not valid UTF-8: the byte 0x%02x at byte %d", b[i], i)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", describeJSONError(err, b, v))
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return badRequest("unexpected data after the JSON object, at byte %d", dec.InputOffset())
	}
	if i := loneSurrogate(b); i >= 0 {
		return badRequest("request body has the escape %s at byte %d, half of a UTF-16 surrogate pair without the other half: it is no character", b[i:i+6], i)
	}
	return nil
}

// invalidUTF8 returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence, or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// loneSurrogate returns the offset of the first \u escape in b, a valid
// JSON text, that stands for half of a UTF-16 surrogate pair not followed
// (or preceded) by its other half, or -1. Outside strings a valid JSON
// text has no backslash.
func loneSurrogate(b []byte) int {
	hex := func(i int) rune {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r := hex(i)
		switch {
		case r < 0: // another escape: \" \\ \n ...
			i++
		case r >= 0xd800 && r < 0xdc00:
			if lo := hex(i + 6); lo < 0xdc00 || lo > 0xdfff {
				return i
			}
			i += 11
		case r >= 0xdc00 && r <= 0xdfff:
			return i
		default:
			i += 5
		}
	}
	return -1
}

// durationField returns the name of the first top-level field of the JSON
// object body that is a api.Duration field of v (a pointer to the struct
// being decoded) and whose value is exactly raw, or "" (request bodies are
// flat).
func durationField(body []byte, raw string, v any) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	durations := map[string]bool{}
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		dt := reflect.TypeFor[api.Duration]()
		for f := range t.Elem().Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if f.Type == dt || f.Type == reflect.PointerTo(dt) {
				durations[strings.ToLower(name)] = true
			}
		}
	}
	var names []string
	for k, v := range fields {
		if durations[strings.ToLower(k)] && string(bytes.TrimSpace(v)) == raw {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return names[0]
}

// describeJSONError turns an encoding/json error on body, decoded into v,
// into a sentence for the client, naming the field where the decoder says
// which one it was or, for a bad duration, the duration field of v that has
// the offending value in body.
func describeJSONError(err error, body []byte, v any) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var dur *api.DurationError
	switch {
	case errors.As(err, &dur):
		if f := durationField(body, dur.Value, v); f != "" {
			return f + ": " + dur.Error()
		}
		return dur.Error()
	case errors.As(err, &syntax):
		return "malformed JSON at byte " + strconv.FormatInt(syntax.Offset, 10) + ": " + syntax.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the body ends in the middle of a value"
	case errors.As(err, &typ) && typ.Field == "":
		return "request body must be a JSON object, not " + typ.Value
	case errors.As(err, &typ):
		return typ.Field + " must be " + jsonKind(typ.Type) + ", not " + typ.Value
	}
	// Unknown fields ("json: unknown field ...") and errors of the wire
	// types' own decoders, which already name what they expected.
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// readOptions parses the query parameters of a read: index, wait, stale and
// consistent.
func readOptions(q url.Values) (ReadOptions, error) {
	var opt ReadOptions
	var err error
	if opt.Stale, err = queryFlag(q, "stale"); err != nil {
		return opt, err
	}
	if opt.Consistent, err = queryFlag(q, "consistent"); err != nil {
		return opt, err
	}
	if opt.Stale && opt.Consistent {
		return opt, badRequest("stale and consistent cannot be used together")
	}
	if v := q.Get("index"); v != "" {
		if opt.Index, err = strconv.ParseUint(v, 10, 64); err != nil {
			return opt, badRequest("bad index %q: must be a non-negative integer", v)
		}
	}
	if v := q.Get("wait"); v != "" {
		if opt.Wait, err = time.ParseDuration(v); err != nil {
			return opt, badRequest("bad wait %q: use a duration such as \"30s\"", v)
		}
		if err := checkRange("wait", opt.Wait, 0, api.MaxQueryWait); err != nil {
			return opt, err
		}
	}
	return opt, nil
}

// listOptions parses the query parameters of a list: those of a read,
// limit (1..api.MaxListLimit, api.DefaultListLimit when absent) and
// after (a cursor of at most api.MaxNameLen bytes).
func listOptions(q url.Values) (ListOptions, error) {
	opt := ListOptions{Limit: api.DefaultListLimit, After: q.Get("after")}
	var err error
	if opt.ReadOptions, err = readOptions(q); err != nil {
		return opt, err
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > api.MaxListLimit {
			return opt, badRequest("bad limit %q: must be an integer from 1 to %d", v, api.MaxListLimit)
		}
		opt.Limit = n
	}
	if len(opt.After) > api.MaxNameLen {
		return opt, badRequest("after is %d bytes long; the limit is %d", len(opt.After), api.MaxNameLen)
	}
	return opt, nil
}

// queryFlag parses a flag parameter: absent is false, present with no value
// is true, and a value must be a boolean.
func queryFlag(q url.Values, name string) (bool, error) {
	vs, ok := q[name]
	if !ok {
		return false, nil
	}
	if vs[0] == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, badRequest("bad %s %q: use ?%s, ?%s=true or ?%s=false", name, vs[0], name, name, name)
	}
	return b, nil
}

// readsLocally reports whether a read can be answered by this node: it asks
// for ?stale, or its query is malformed, which this node can report as well
// as the leader.
func readsLocally(r *http.Request) bool {
	opt, err := readOptions(r.URL.Query())
	return err != nil || opt.Stale
}

// forwardWait returns how long the leader may hold r, a request of route
// rt, before it answers by design, as r says it outside its body, which a
// forwarding follower passes on unread: the ?wait= of a blocking read, or
// the X-Lockd-Wait header of a blocking acquire or campaign (whose wait is
// in the body: see checkHeaderWait). An acquire or campaign without the
// header may ask for any wait the API allows, so it gets api.MaxWait. Any
// other route's wait is 0.
func forwardWait(r *http.Request, rt route) (time.Duration, error) {
	switch rt.wait {
	case queryWait:
		opt, err := readOptions(r.URL.Query())
		return opt.Wait, err
	case bodyWait:
		d, given, err := headerWait(r)
		if !given {
			return api.MaxWait, nil
		}
		return d, err
	}
	return 0, nil
}

// headerWait parses r's X-Lockd-Wait header (api.HeaderWait); given
// reports whether r has one. A wait that does not parse, is out of
// range, or is given more than once, is bad_request.
func headerWait(r *http.Request) (d time.Duration, given bool, err error) {
	vs := r.Header.Values(api.HeaderWait)
	switch len(vs) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, true, badRequest("the %s header is given %d times; give it once", api.HeaderWait, len(vs))
	}
	if d, err = time.ParseDuration(vs[0]); err != nil {
		return 0, true, badRequest("bad %s header %q: use a duration such as \"30s\"", api.HeaderWait, vs[0])
	}
	if err := checkRange(api.HeaderWait+" header", d, 0, api.MaxWait); err != nil {
		return 0, true, err
	}
	return d, true, nil
}

// checkHeaderWait refuses an acquire or campaign whose X-Lockd-Wait header
// is malformed or says another wait than the body's: a follower bounds its
// forward of the request by the header, so the two must be one wait. A
// request without the header is not checked.
func checkHeaderWait(r *http.Request, body time.Duration) error {
	d, given, err := headerWait(r)
	if err != nil || !given || d == body {
		return err
	}
	return badRequest("the %s header says %v and the body's wait %v: they must be the same", api.HeaderWait, d, body)
}
