CREATE TABLE "deployment_replica_health" (
	"rowid" bigserial NOT NULL,
	"deployment_id" text NOT NULL,
	"replica" text NOT NULL,
	"healthy" bigint NOT NULL,
	"ejected" bigint NOT NULL,
	"streak" bigint NOT NULL,
	"reason" text,
	"detail" text,
	"checked_at" text NOT NULL,
	CONSTRAINT "deployment_replica_health_deployment_id_replica_pk" PRIMARY KEY("deployment_id","replica"),
	CONSTRAINT "deployment_replica_health_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "deployment_traffic_minutes" (
	"rowid" bigserial NOT NULL,
	"deployment_id" text NOT NULL,
	"minute" bigint NOT NULL,
	"requests" bigint NOT NULL,
	"client_errors" bigint NOT NULL,
	"server_errors" bigint NOT NULL,
	"le_10" bigint NOT NULL,
	"le_50" bigint NOT NULL,
	"le_100" bigint NOT NULL,
	"le_250" bigint NOT NULL,
	"le_500" bigint NOT NULL,
	"le_1000" bigint NOT NULL,
	"le_2500" bigint NOT NULL,
	"le_10000" bigint NOT NULL,
	"over" bigint NOT NULL,
	CONSTRAINT "deployment_traffic_minutes_deployment_id_minute_pk" PRIMARY KEY("deployment_id","minute"),
	CONSTRAINT "deployment_traffic_minutes_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "rate_limit_buckets" (
	"rowid" bigserial NOT NULL,
	"deployment_id" text NOT NULL,
	"caller" text NOT NULL,
	"tokens" double precision NOT NULL,
	"granted" double precision NOT NULL,
	"refilled_at" double precision NOT NULL,
	CONSTRAINT "rate_limit_buckets_deployment_id_caller_pk" PRIMARY KEY("deployment_id","caller"),
	CONSTRAINT "rate_limit_buckets_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "upstreams" text;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "affinity" text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "retries" bigint;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "max_concurrent" bigint;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "queue_timeout_ms" bigint;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "rate_limit" text;--> statement-breakpoint
ALTER TABLE "deployment_replica_health" ADD CONSTRAINT "deployment_replica_health_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deployment_traffic_minutes" ADD CONSTRAINT "deployment_traffic_minutes_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rate_limit_buckets" ADD CONSTRAINT "rate_limit_buckets_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;