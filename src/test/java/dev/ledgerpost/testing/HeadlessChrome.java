package dev.ledgerpost.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's chromium, headless, driven by Debian's chromedriver, for browser tests. Both paths are set
 * explicitly so that Selenium never looks for (or downloads) a driver or a browser of its own; each browser
 * gets a fresh profile directory under target/, removed at close. .ci/run installs both packages.
 */
public final class HeadlessChrome implements AutoCloseable {
  public static final String CHROMIUM = "/usr/bin/chromium";
  public static final String CHROMEDRIVER = "/usr/bin/chromedriver";

  private final ChromeDriver driver;
  private final Path profile;

  private HeadlessChrome(ChromeDriver driver, Path profile) {
    this.driver = driver;
    this.profile = profile;
  }

  public static HeadlessChrome start(int width, int height) {
    if (!new File(CHROMIUM).canExecute() || !new File(CHROMEDRIVER).canExecute()) {
      throw new IllegalStateException(CHROMIUM + " and " + CHROMEDRIVER + " are needed: apt-get install chromium chromium-driver");
    }
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

  public ChromeDriver driver() {
    return driver;
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
