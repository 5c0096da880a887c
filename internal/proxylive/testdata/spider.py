"""A Scrapy crawl of a URL list for proxylive (run with /usr/bin/python3).

Every URL is requested once (Scrapy's own retries aside), through --proxy
when given (meta['proxy'], so Scrapy sends absolute-form requests to it),
with the settings of issue 32: CONCURRENT_REQUESTS = 16, AutoThrottle off
unless --autothrottle, DOWNLOAD_DELAY = 0, robots.txt not obeyed, Scrapy's
default RetryMiddleware (429 and 503 among its codes, RETRY_TIMES 2).
CONCURRENT_REQUESTS_PER_DOMAIN is raised from its default 8 to 16 so the
one host sees the 16 requests the setting names (--per-domain changes it).

Writes {"statuses": {url: final status, 0 for an error}, "stats": {...}}
as JSON to --out.
"""

import argparse
import json

import scrapy
from scrapy.crawler import CrawlerProcess


class ListSpider(scrapy.Spider):
    name = "proxylive"

    def __init__(self, urls=(), proxy="", **kwargs):
        super().__init__(**kwargs)
        self.urls = urls
        self.proxy = proxy
        self.statuses = {}

    def start_requests(self):
        for url in self.urls:
            meta = {"handle_httpstatus_all": True}
            if self.proxy:
                meta["proxy"] = self.proxy
            yield scrapy.Request(url, meta=meta, dont_filter=True,
                                 callback=self.parse, errback=self.failed)

    def parse(self, response):
        self.statuses[response.url] = response.status

    def failed(self, failure):
        self.statuses[failure.request.url] = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--proxy", default="")
    ap.add_argument("--autothrottle", action="store_true")
    ap.add_argument("--per-domain", type=int, default=16)
    ap.add_argument("--timeout", type=int, default=300, help="CLOSESPIDER_TIMEOUT, seconds")
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    with open(args.list) as f:
        urls = [line.strip() for line in f if line.strip()]
    settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_domain,
        "AUTOTHROTTLE_ENABLED": args.autothrottle,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_TIMEOUT": 120,
        "CLOSESPIDER_TIMEOUT": args.timeout,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "USER_AGENT": "proxylive-scrapy",
    }
    if args.log:
        settings["LOG_FILE"] = args.log
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(ListSpider)
    process.crawl(crawler, urls=urls, proxy=args.proxy)
    process.start()
    spider = crawler.spider
    stats = {k: v for k, v in crawler.stats.get_stats().items()
             if k.startswith(("downloader/", "retry/", "finish_reason", "elapsed"))}
    with open(args.out, "w") as f:
        json.dump({"statuses": spider.statuses, "stats": stats}, f, default=str)


if __name__ == "__main__":
    main()
