"""Drives Sluice's dashboard in a real browser (Debian's Chromium, headless, through Selenium and
chromedriver), as tests/dashboard.rs asks: logs in, sees a proxy's count rise after requests sent
to it, deactivates an endpoint. Prints one line of JSON with what it saw; exits 1 on a failure.

    drive.py DASHBOARD_URL PROXY_URL PROXY_NAME ENDPOINT_NAME
"""

import json
import sys
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

SOAP = (
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
    "<soapenv:Body><buyStocks><order><symbol>IBM</symbol></order></buyStocks></soapenv:Body>"
    "</soapenv:Envelope>"
)


def main():
    dashboard, proxy_url, proxy, endpoint = sys.argv[1:5]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    # The page redraws its tables every 2 s: an element found just before may be gone.
    wait = WebDriverWait(driver, 20, ignored_exceptions=[StaleElementReferenceException])

    def again(act):
        for _ in range(200):
            try:
                return act()
            except StaleElementReferenceException:
                continue
        return act()

    def read(css):
        return again(lambda: driver.find_element(By.CSS_SELECTOR, css).text)

    seen = {}
    try:
        driver.get(dashboard)
        driver.find_element(By.ID, "user").send_keys("admin")
        driver.find_element(By.ID, "password").send_keys("admin")
        driver.find_element(By.ID, "login").click()
        count = f'tr[data-service="{proxy}"] .count'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, count))
        before = int(read(count))
        seen["before"] = before
        for _ in range(5):
            req = urllib.request.Request(
                proxy_url,
                data=SOAP.encode(),
                headers={"Content-Type": "text/xml", "SOAPAction": "urn:buyStocks"},
            )
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
        wait.until(lambda d: int(d.find_element(By.CSS_SELECTOR, count).text) >= before + 5)
        seen["after"] = int(read(count))
        seen["rate"] = read(f'tr[data-service="{proxy}"] .rate')
        row = f'tr[data-endpoint="{endpoint}"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row + " .toggle"))
        seen["endpoint_before"] = read(row + " .state")
        again(lambda: driver.find_element(By.CSS_SELECTOR, row + " .toggle").click())
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, row + " .state").text == "inactive")
        seen["endpoint_after"] = read(row + " .state")
        seen["error"] = driver.find_element(By.ID, "error").text
    except Exception as e:  # what the page showed, for the test's message
        seen["failed"] = repr(e)
        seen["page"] = driver.find_element(By.TAG_NAME, "body").text[:2000]
        print(json.dumps(seen))
        return 1
    finally:
        driver.quit()
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
