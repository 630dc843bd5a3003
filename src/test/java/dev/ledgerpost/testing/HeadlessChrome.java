package dev.ledgerpost.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.NoSuchElementException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Debian's chromium, headless, driven by Debian's chromedriver, for browser tests. Both paths are set
 * explicitly so that Selenium never looks for (or downloads) a driver or a browser of its own; each browser
 * gets a fresh profile directory under target/ (its {@code profile}), removed at close. scripts/test.sh installs both
 * packages.
 */
public record HeadlessChrome(ChromeDriver driver, Path profile) implements AutoCloseable {
  public static final String CHROMIUM = "/usr/bin/chromium";
  public static final String CHROMEDRIVER = "/usr/bin/chromedriver";

  public static HeadlessChrome start(int width, int height) {
    ExternalTool.CHROMIUM.path(); // each fails with one line when it is not installed
    ExternalTool.CHROMEDRIVER.path();
    System.setProperty(ChromeDriverService.CHROME_DRIVER_EXE_PROPERTY, CHROMEDRIVER);
    Path profile = GatewayHarness.tempDir("chromium-profile-");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
        "--user-data-dir=" + profile, "--window-size=" + width + "," + height, "--lang=en-GB");
    // The page's console (CSP violations, script errors) is read back by the tests.
    options.setCapability("goog:loggingPrefs", Map.of("browser", "ALL"));
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(CHROMEDRIVER))
        .usingAnyFreePort()
        .build();
    return new HeadlessChrome(new ChromeDriver(service, options), profile);
  }

  /** The viewport's size in CSS pixels (the window is made larger by what the browser itself takes). */
  public void viewport(int width, int height) {
    driver.manage().window().setSize(new Dimension(width, height));
    Number innerWidth = (Number) driver.executeScript("return window.innerWidth");
    Number innerHeight = (Number) driver.executeScript("return window.innerHeight");
    driver.manage().window().setSize(new Dimension(2 * width - innerWidth.intValue(), 2 * height - innerHeight.intValue()));
  }

  /** prefers-color-scheme as the page sees it: "light" or "dark" (DevTools' media emulation). */
  public void colorScheme(String scheme) {
    driver.executeCdpCommand("Emulation.setEmulatedMedia",
        Map.of("features", List.of(Map.of("name", "prefers-color-scheme", "value", scheme))));
  }

  /** The time zone the page's Date sees (an IANA id such as Asia/Kolkata; "" for the machine's own again). */
  public void timeZone(String id) {
    driver.executeCdpCommand("Emulation.setTimezoneOverride", Map.of("timezoneId", id));
  }

  /** A wait on this browser that polls every 50 ms and ignores elements missing or replaced meanwhile (pages re-render). */
  public WebDriverWait await(Duration timeout) {
    WebDriverWait w = new WebDriverWait(driver, timeout, Duration.ofMillis(50));
    w.ignoring(NoSuchElementException.class);
    w.ignoring(StaleElementReferenceException.class);
    return w;
  }

  /** The element once present, within {@code timeout}. */
  public WebElement awaitPresent(By by, Duration timeout) {
    return await(timeout).until(ExpectedConditions.presenceOfElementLocated(by));
  }

  /**
   * What the page's console logged that its security policy refused or a script threw. A cut connection's failed
   * requests are expected, and not listed.
   */
  public List<String> pageProblems() {
    List<String> problems = new ArrayList<>();
    for (LogEntry e : driver.manage().logs().get(LogType.BROWSER)) {
      String m = e.getMessage();
      if (m.contains("Content Security Policy") || m.contains("Uncaught") || m.contains("SyntaxError") || m.contains("TypeError")) {
        problems.add(m);
      }
    }
    return problems;
  }

  /** A PNG of the viewport, written to {@code file} (its directory created). */
  public Path screenshot(Path file) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      Files.write(file, driver.getScreenshotAs(OutputType.BYTES));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // a profile left under target/ is removed by the next clean
      }
    }
  }
}
