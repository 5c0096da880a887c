"""Python requests fetching a URL list through a proxy, for proxylive
(run with /usr/bin/python3). Prints "STATUS URL" per URL, 0 for an error.

By default one Session for the whole list (keep-alive to the proxy; one
CONNECT tunnel per origin for https). --session-per-request makes a new
Session, so a new connection (and for https a new tunnel), per URL;
--threads runs that many at once. TLS is verified against --ca (the
REQUESTS_CA_BUNDLE environment variable works as well).
"""

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

import requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True)
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--ca", default="")
    ap.add_argument("--session-per-request", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    with open(args.list) as f:
        urls = [line.strip() for line in f if line.strip()]
    proxies = {"http": args.proxy, "https": args.proxy}
    verify = args.ca or True
    shared = requests.Session()

    def fetch(url):
        s = requests.Session() if args.session_per_request else shared
        try:
            r = s.get(url, proxies=proxies, verify=verify, timeout=args.timeout)
            r.content
            return "%d %s" % (r.status_code, url)
        except Exception as e:  # noqa: BLE001 - report every failure as 0
            return "0 %s %s" % (url, type(e).__name__)
        finally:
            if args.session_per_request:
                s.close()

    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        for line in pool.map(fetch, urls):
            print(line, flush=True)
    shared.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
