package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxData caps a request body read from a file (--data @FILE): every
// request of the job sends it, and the job holds it in memory.
const maxData = 64 << 20

// dataFlag is --data: the body of every request, as given, or read from
// FILE when it starts with @ (as curl's --data-binary).
type dataFlag struct{ body *[]byte }

func (f dataFlag) String() string {
	if f.body == nil || *f.body == nil {
		return ""
	}
	return fmt.Sprintf("%d bytes", len(*f.body))
}

func (f dataFlag) Type() string { return "BODY" }

func (f dataFlag) Set(s string) error {
	name, ok := strings.CutPrefix(s, "@")
	if !ok {
		*f.body = []byte(s)
		return nil
	}
	if name == "" {
		return errors.New("@ names no file: want @FILE")
	}
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxData+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxData {
		return fmt.Errorf("%s is larger than %d MiB: a body is sent with every request, held in memory", name, maxData>>20)
	}
	if b == nil {
		b = []byte{} // an empty file is an empty body, not none
	}
	*f.body = b
	return nil
}

// parseRequest checks --method against --data, and picks the defaults
// curl users expect: --data alone makes a POST, with a form Content-Type
// unless -H names one.
func (o *fetchOptions) parseRequest() error {
	m := o.Method
	switch {
	case m == "" && o.Body != nil:
		o.Method = http.MethodPost
	case m == "":
	case !httpguts.ValidHeaderFieldName(m):
		return usageErr("--method %q: not an HTTP method (a token such as GET, POST or PUT)", m)
	case m == http.MethodConnect:
		return usageErr("--method CONNECT: opens a tunnel, not a request polite can fetch")
	case m == http.MethodHead && o.Body != nil:
		return usageErr("--method HEAD with --data: a HEAD request carries no body")
	}
	if o.Body != nil && o.Header.Get("Content-Type") == "" {
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return nil
}
