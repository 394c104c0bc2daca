/**
 * Sealed secrets' key in tests, in-process (test/helpers/app.ts) and in the processes a test
 * starts (test/helpers/gatehouse-process.ts), so that both can read what the other sealed on one
 * database, and no test writes a key file into the working directory; `SECRET_KEY: ''` unsets it.
 */
export const TEST_SECRET_KEY = 'test-secret-key-of-at-least-32-characters'
