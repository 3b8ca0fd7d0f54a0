// Command slowbody measures what slow-body clients do to a lockd node: it
// opens -n connections from one local address that each send a request's
// headers and part of its body and then nothing, while another address
// asks the node for GET /v1/cluster every 100 ms. It prints how the node
// answered the slow connections, when it closed them, and how long the
// other client waited. It is the by-hand check behind docs/security.md,
// "Limits"; it stops by itself after -for.
//
//	go run ./scripts/slowbody -addr 127.0.0.1:7400 -n 20000
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7400", "the node's HTTP address")
	n := flag.Int("n", 20000, "slow-body connections to open")
	from := flag.String("from", "127.0.0.9", "local address of the slow connections")
	probeFrom := flag.String("probe-from", "127.0.0.2", "local address of the other client")
	dur := flag.Duration("for", 60*time.Second, "how long to run")
	flag.Parse()
	raiseNofile(uint64(max(*n, 0)) + 1024)

	start := time.Now()
	stop := time.Now().Add(*dur)
	type result struct {
		status int
		ended  time.Duration
		err    string
	}
	results := make([]result, *n)
	var wg sync.WaitGroup
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*from)}, Timeout: 10 * time.Second}
			c, err := d.Dial("tcp", *addr)
			if err != nil {
				results[i] = result{err: "dial: " + err.Error()}
				return
			}
			defer c.Close()
			t0 := time.Now()
			_ = c.SetDeadline(stop)
			fmt.Fprint(c, "POST /v1/sessions HTTP/1.1\r\nHost: lockd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ttl\":")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					results[i] = result{err: "still open at the end"}
					return
				}
				results[i] = result{ended: time.Since(t0)} // closed without an answer
				return
			}
			resp.Body.Close()
			results[i] = result{status: resp.StatusCode, ended: time.Since(t0)}
		}()
	}
	var lat []time.Duration
	failed := 0
	hc := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*probeFrom)}}).DialContext}}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
probe:
	for time.Now().Before(stop) {
		t0 := time.Now()
		resp, err := hc.Get("http://" + *addr + "/v1/cluster")
		if err != nil || resp.StatusCode != http.StatusOK {
			failed++
		} else {
			lat = append(lat, time.Since(t0))
		}
		if resp != nil {
			resp.Body.Close()
		}
		select {
		case <-done:
			break probe
		case <-time.After(100 * time.Millisecond):
		}
	}
	wg.Wait()
	byStatus := map[string][]time.Duration{}
	for _, r := range results {
		k := fmt.Sprint(r.status)
		if r.status == 0 {
			k = "closed without an answer"
		}
		if r.err != "" {
			k = r.err
		}
		byStatus[k] = append(byStatus[k], r.ended)
	}
	fmt.Printf("%d slow-body connections from %s to %s, over %v:\n", *n, *from, *addr, time.Since(start).Round(time.Millisecond))
	for k, ds := range byStatus {
		slices.Sort(ds)
		fmt.Printf("  %-28s %6d  ended after: median %v, max %v\n", k, len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		fmt.Printf("other client (%s): %d answers, %d failed; latency median %v, max %v\n", *probeFrom, len(lat), failed,
			lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	} else {
		fmt.Printf("other client (%s): no answer, %d failed\n", *probeFrom, failed)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// raiseNofile raises this process's open-file limit to want if it can.
func raiseNofile(want uint64) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil || rl.Cur >= want {
		return
	}
	rl.Cur = min(want, rl.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}
