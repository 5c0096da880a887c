package testbed_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/polite-go/polite/testbed"
)

// pair dials n and accepts the other end.
func pair(t *testing.T, n *testbed.Network) (client, server net.Conn) {
	t.Helper()
	ln := n.Listen()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := n.DialContext(context.Background(), "tcp", "anything:80")
	if err != nil {
		t.Fatal(err)
	}
	return c, <-accepted
}

func TestNetworkConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testbed.Network
		defer n.Close()
		c, s := pair(t, &n)
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if k, err := s.Read(buf); err != nil || string(buf[:k]) != "hello" {
			t.Fatalf("Read = %q, %v", buf[:k], err)
		}
		if c.LocalAddr().String() == s.LocalAddr().String() || c.RemoteAddr().String() != s.LocalAddr().String() {
			t.Errorf("addresses: client %v→%v, server %v→%v", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
		}

		// A read deadline wakes a blocked reader, in fake time.
		s.SetReadDeadline(time.Now().Add(time.Second))
		start := time.Now()
		_, err := s.Read(buf)
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Read past deadline = %v after %v, want deadline exceeded after 1s", err, time.Since(start))
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("deadline error %v is not a net.Error timeout", err)
		}
		s.SetReadDeadline(time.Time{})

		// A past deadline aborts a pending read at once (net/http relies on it).
		done := make(chan error)
		go func() { _, err := s.Read(buf); done <- err }()
		synctest.Wait()
		s.SetReadDeadline(time.Unix(1, 0))
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("aborted Read = %v", err)
		}
		s.SetReadDeadline(time.Time{})

		// Writes block when the buffer is full, until the peer reads.
		big := make([]byte, 200<<10)
		go func() {
			_, err := c.Write(big)
			done <- err
		}()
		synctest.Wait()
		got, err := io.ReadAll(io.LimitReader(s, int64(len(big))))
		if err != nil || len(got) != len(big) {
			t.Fatalf("read %d, %v", len(got), err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		// Close: the peer drains, then reads EOF; its writes fail.
		c.Write([]byte("bye"))
		c.Close()
		if got, err := io.ReadAll(s); string(got) != "bye" || err != nil {
			t.Errorf("after peer Close: ReadAll = %q, %v", got, err)
		}
		if _, err := s.Write([]byte("x")); err == nil {
			t.Error("Write to a closed peer succeeded")
		}
		if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read after Close = %v, want net.ErrClosed", err)
		}
		s.Close()
	})
}

func TestNetworkRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testbed.Network
		if _, err := n.DialContext(context.Background(), "tcp", "a:80"); err == nil {
			t.Error("dial with no listener succeeded")
		}
		n.Listen().Close()
		if _, err := n.DialContext(context.Background(), "tcp", "a:80"); err == nil {
			t.Error("dial to a closed listener succeeded")
		}
		n.Listen() // a new listener, nobody accepting: the dial waits for ctx
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := n.DialContext(ctx, "tcp", "a:80"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("dial with nobody accepting = %v, want deadline exceeded", err)
		}
		n.Close()
	})
}

// Any handler can be served over a Network, with keep-alive connections.
func TestNetworkServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testbed.Network
		defer n.Close()
		n.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Second)
			io.WriteString(w, r.Host)
		}))
		c := n.Client()
		start := time.Now()
		for i := range 3 {
			resp, err := c.Get("http://x.test/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "x.test" {
				t.Errorf("request %d: body %q", i, body)
			}
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("3 requests took %v, want 3s of fake time", d)
		}
	})
}

func TestNetworkClosesRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testbed.Network
		n.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		errc := make(chan error)
		go func() {
			_, err := n.Client().Get("http://x.test/")
			errc <- err
		}()
		synctest.Wait()
		n.Close()
		if err := <-errc; err == nil {
			t.Error("request running through Close succeeded")
		}
	})
}

// A Close that comes while dials are under way must find every connection
// whole: the race detector once caught Close reading a connection's close
// hook that its dial was still writing, at the end of a Transport test.
func TestNetworkCloseDuringDials(t *testing.T) {
	for range 100 {
		var n testbed.Network
		ln := n.Listen()
		go func() {
			for {
				if _, err := ln.Accept(); err != nil {
					return
				}
			}
		}()
		dialed, done := make(chan struct{}, 4), make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range 50 {
					if _, err := n.DialContext(context.Background(), "tcp", "x:80"); err != nil {
						return
					}
					if i == 0 {
						dialed <- struct{}{}
					}
				}
			}()
		}
		for range 4 {
			<-dialed // Close with connections open and dials still coming
		}
		n.Close()
		for range 4 {
			<-done
		}
	}
}
