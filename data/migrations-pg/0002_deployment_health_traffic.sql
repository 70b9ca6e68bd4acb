CREATE TABLE "deployment_health" (
	"rowid" bigserial NOT NULL,
	"deployment_id" text PRIMARY KEY NOT NULL,
	"healthy" bigint NOT NULL,
	"reason" text,
	"detail" text,
	"checked_at" text NOT NULL,
	CONSTRAINT "deployment_health_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "deployment_traffic" (
	"rowid" bigserial NOT NULL,
	"deployment_id" text PRIMARY KEY NOT NULL,
	"requests" bigint NOT NULL,
	"last_request_at" text NOT NULL,
	CONSTRAINT "deployment_traffic_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "health_path" text;--> statement-breakpoint
ALTER TABLE "deployment_health" ADD CONSTRAINT "deployment_health_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deployment_traffic" ADD CONSTRAINT "deployment_traffic_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;