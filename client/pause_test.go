package client_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// The paused-holder test runs the lock holder in a child process (this test
// binary, re-executed with LOCKD_PAUSE_CHILD set), so that it can be
// stopped with SIGSTOP like a real program.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKD_PAUSE_CHILD") != "" {
		os.Exit(pausedHolder(os.Getenv("LOCKD_PAUSE_CHILD"), os.Getenv("LOCKD_PAUSE_RESOURCE")))
	}
	os.Exit(m.Run())
}

// pausedHolder takes the lock, reports its token, then loops: while the
// library says it holds the lock it writes to the resource with its token;
// once Lost fires it reports LOST, and then tries one more write with the
// stale token (a buggy holder ignoring Lost) and reports the resource's answer.
func pausedHolder(endpoints, resource string) int {
	ctx := context.Background()
	cl, err := client.New(strings.Split(endpoints, ",")...)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	s, err := client.NewSession(ctx, cl, client.WithTTL(time.Second), client.WithLockDelay(0))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	m := client.NewMutex(s, "fenced")
	if err := m.Lock(ctx); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	token := m.Token()
	fmt.Println("LOCKED", token)
	for {
		select {
		case <-m.Lost():
			fmt.Println("LOST")
			fmt.Println("STALE-WRITE", write(resource, token))
			return 0
		default:
		}
		if m.Held() {
			write(resource, token)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func write(resource string, token uint64) int {
	resp, err := http.Post(resource+"?token="+strconv.FormatUint(token, 10), "text/plain", nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestMutex_PausedHolderIsFencedOut(t *testing.T) {
	c := servertest.New(t, 3)
	var fence client.Fence
	var mu sync.Mutex
	var accepted []uint64
	resource := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strconv.ParseUint(r.URL.Query().Get("token"), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		if err := fence.Admit("fenced", tok); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		accepted = append(accepted, tok)
	}))
	defer resource.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKD_PAUSE_CHILD="+strings.Join(c.URLs(), ","), "LOCKD_PAUSE_RESOURCE="+resource.URL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGCONT); cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	first := readLine(t, lines)
	var childToken uint64
	if _, err := fmt.Sscanf(first, "LOCKED %d", &childToken); err != nil {
		t.Fatalf("child said %q", first)
	}

	cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	other := client.NewMutex(mustSession(t, mustClient(t, c.URLs()...)), "fenced")
	if err := other.Lock(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if other.Token() <= childToken {
		t.Fatalf("new holder's token %d is not larger than the paused holder's %d", other.Token(), childToken)
	}
	if got := write(resource.URL, other.Token()); got != http.StatusOK {
		t.Fatalf("new holder's write = %d", got)
	}
	t.Logf("another client acquired %v after the pause", time.Since(stopped))
	cmd.Process.Signal(syscall.SIGCONT)

	if got := readLine(t, lines); got != "LOST" {
		t.Fatalf("after resuming, the paused holder said %q first; want LOST before anything else", got)
	}
	if got := readLine(t, lines); got != fmt.Sprintf("STALE-WRITE %d", http.StatusConflict) {
		t.Fatalf("the stale write got %q; want the fenced resource to refuse it (409)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(accepted); i++ {
		if accepted[i] < accepted[i-1] {
			t.Fatalf("the resource accepted token %d after %d: %v", accepted[i], accepted[i-1], accepted)
		}
	}
	if last := accepted[len(accepted)-1]; last != other.Token() {
		t.Fatalf("last accepted token %d, want the new holder's %d", last, other.Token())
	}
}

func readLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("child exited")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("child said nothing for 20s")
	}
	return ""
}
