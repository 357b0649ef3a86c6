// The Angular test set-up both Angular test files share: JIT compilation, the browser testing platform (over
// happy-dom: the file that imports this says `// @vitest-environment happy-dom`), a zoneless TestBed per case, and
// fake time. Each case must end with no timer left: no frame, retry wait or change detection behind it.
import '@angular/compiler';
import { provideZonelessChangeDetection } from '@angular/core';
import { TestBed } from '@angular/core/testing';
import { BrowserTestingModule, platformBrowserTesting } from '@angular/platform-browser/testing';
import { afterEach, beforeEach, expect, vi } from 'vitest';

TestBed.initTestEnvironment(BrowserTestingModule, platformBrowserTesting());

beforeEach(() => {
  vi.useFakeTimers();
  TestBed.configureTestingModule({ providers: [provideZonelessChangeDetection()] });
});

afterEach(() => {
  TestBed.resetTestingModule();
  expect(vi.getTimerCount()).toBe(0);
  vi.useRealTimers();
});
