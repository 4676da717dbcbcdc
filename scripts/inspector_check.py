"""The query inspector in a real browser: Chromium driven over WebDriver (Selenium).

Usage: python inspector_check.py BASE_URL TOKEN SCREENSHOT
BASE_URL is a `crag serve` with `server.inspector = true` over the fixture BEIR collection.
Loads /inspect, runs a query, checks that the legs' ranks shown equal the API's, that the
verdict, criteria and timings are drawn, that turning Corrective RAG off changes the answer,
and that "copy as curl" gives a command for the same request; saves a screenshot. Exits 1 with
the reason on any difference.
"""

import json
import sys
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

QUERY = "does aspirin help people with high blood pressure"
TOP_K = 5


def check(condition, message):
    if not condition:
        print(f"inspector-check: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def api(base, token, body):
    request = urllib.request.Request(
        f"{base}/v1/query",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def shown(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "#results > li")
    return [
        (
            r.get_attribute("data-chunk-id"),
            r.get_attribute("data-keyword-rank"),
            r.get_attribute("data-vector-rank"),
        )
        for r in rows
    ]


def run(driver):
    driver.execute_script("document.body.dataset.state = ''")
    driver.find_element(By.ID, "run").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state"))
    state = driver.find_element(By.TAG_NAME, "body").get_attribute("data-state")
    check(state == "done", f"the page says: {driver.find_element(By.ID, 'status').text}")


def main(base, token, screenshot):
    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1500"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(f"{base}/inspect")
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.ID, "query").send_keys(QUERY)
        topk = driver.find_element(By.ID, "topk")
        topk.clear()
        topk.send_keys(str(TOP_K))
        run(driver)

        body = {"query": QUERY, "topK": TOP_K, "useCrag": True, "useRerank": True, "useWebSearch": False, "filters": {}}
        expected = [
            (r["chunkId"], str(r["keyword"]["rank"]) if r.get("keyword") else "", str(r["vector"]["rank"]) if r.get("vector") else "")
            for r in api(base, token, body)["results"]
        ]
        check(shown(driver) == expected, f"ranks shown {shown(driver)} != the API's {expected}")
        for table in ("keyword-list", "vector-list", "fused-list"):
            rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tr")
            check(0 < len(rows) <= TOP_K, f"{table}: {len(rows)} rows")
        verdict = driver.find_element(By.ID, "verdict").get_attribute("data-verdict")
        check(verdict in ("correct", "ambiguous", "incorrect"), f"verdict {verdict!r}")
        check(driver.find_elements(By.CSS_SELECTOR, "#criteria .bar"), "no criteria bars")
        check(driver.find_elements(By.CSS_SELECTOR, "#timings .bar"), "no timing bars")
        check(driver.find_elements(By.CSS_SELECTOR, "#results mark"), "no query term highlighted")
        driver.save_screenshot(screenshot)

        with_crag = shown(driver)
        driver.find_element(By.ID, "crag").click()
        run(driver)
        check(driver.find_element(By.ID, "verdict").get_attribute("data-verdict") == "off", "CRAG off still judged")
        plain = api(base, token, {**body, "useCrag": False})["results"]
        check([c for c, _, _ in shown(driver)] == [r["chunkId"] for r in plain], "CRAG off: not the API's list")
        check(shown(driver) != with_crag, "turning CRAG off changed nothing")

        driver.find_element(By.ID, "copy-curl").click()
        command = driver.find_element(By.ID, "command").text
        check(command.startswith("curl -s ") and '"useCrag":false' in command and QUERY in command, f"curl: {command}")
    finally:
        driver.quit()
    print(f"inspector-check: Chromium showed the legs' ranks the API gives, the verdict ({verdict}), "
          f"criteria and timings; CRAG off changed the answer; screenshot {screenshot}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
