CREATE TABLE `login_throttle` (
	`key` text PRIMARY KEY NOT NULL,
	`tokens` real NOT NULL,
	`at_ms` integer NOT NULL,
	`level_before` real NOT NULL
);
